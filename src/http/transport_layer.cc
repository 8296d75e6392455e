// SPDX-License-Identifier: Apache-2.0
// The transport layer: the last of the attempt layers, where an attempt
// becomes an exchange for the client's transport. The transport sees the
// exchange and its events (client_transport.h), never the attempt's
// layers.
#include "layers.h"

namespace outbound::http::internal {
namespace {

class TransportLayer final : public AttemptLayer {
 public:
  explicit TransportLayer(std::unique_ptr<ClientTransport> transport)
      : transport_(std::move(transport)) {}

  std::string_view name() const override { return "transport"; }

  void Start(Attempt& attempt) override {
    transport_->Start(attempt.shared_from_this(), attempt.exchange());
  }

  // The transport ends attempts itself; nothing passes through.
  void Finish(Attempt&, AttemptOutcome&) override {}

 private:
  std::unique_ptr<ClientTransport> transport_;
};

}  // namespace

std::unique_ptr<AttemptLayer> MakeTransportLayer(std::unique_ptr<ClientTransport> transport) {
  return std::make_unique<TransportLayer>(std::move(transport));
}

}  // namespace outbound::http::internal
