// SPDX-License-Identifier: Apache-2.0
//
// Building requests: percent-encoding, queries, bodies; and Require2xx.
#include "outbound/http/message.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "body_pipe_link.h"

namespace outbound::http {
namespace {

// RFC 3986 2.3 unreserved: the only bytes a component keeps as they are.
constexpr std::array<bool, 256> kUnreserved = [] {
  std::array<bool, 256> table{};
  for (int c = 'A'; c <= 'Z'; ++c) table[c] = true;
  for (int c = 'a'; c <= 'z'; ++c) table[c] = true;
  for (int c = '0'; c <= '9'; ++c) table[c] = true;
  for (char c : {'-', '.', '_', '~'}) table[static_cast<unsigned char>(c)] = true;
  return table;
}();

void AppendEncoded(std::string& out, std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (kUnreserved[byte]) {
      out += c;
    } else {
      out += '%';
      out += kHex[byte >> 4];
      out += kHex[byte & 0xF];
    }
  }
}

}  // namespace

std::string PercentEncode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  AppendEncoded(out, text);
  return out;
}

Query& Query::Add(std::string_view name, std::string_view value) {
  if (!encoded_.empty()) encoded_ += '&';
  AppendEncoded(encoded_, name);
  encoded_ += '=';
  AppendEncoded(encoded_, value);
  return *this;
}

Request& Request::WithQuery(const Query& query) {
  if (query.empty()) return *this;
  std::size_t question = url.find('?');
  if (question == std::string::npos) {
    url += '?';
  } else if (question + 1 != url.size() && url.back() != '&') {
    url += '&';
  }
  url += query.encoded();
  return *this;
}

Request& Request::WithBody(Body new_body) {
  body = std::move(new_body.data);
  if (!new_body.content_type.empty()) {
    std::erase_if(headers, [](const auto& h) { return SameHeaderName(h.first, "Content-Type"); });
    headers.emplace_back("Content-Type", std::move(new_body.content_type));
  }
  return *this;
}

Request& Request::StreamBodyFromOnce(BodyReader reader, std::optional<std::uint64_t> length) {
  // The client asks once (body_replayable says so); a second `open` would
  // be a bug, and gets a reader that says so rather than a drained one.
  auto once = std::make_shared<BodyReader>(std::move(reader));
  body_source = BodySource{[once]() -> BodyReader {
                             if (*once) return std::exchange(*once, nullptr);
                             return [](std::span<char>) -> Result<std::size_t> {
                               return Fail(ErrorKind::kInvalidRequest,
                                           "a body that can be read once was asked for twice");
                             };
                           },
                           length};
  body_replayable = false;
  return *this;
}

Request& Request::StreamBodyFromPipe(std::shared_ptr<BodyPipe> pipe) {
  body_replayable = false;
  if (pipe == nullptr) {
    body_source = BodySource{[]() -> BodyReader {
      return [](std::span<char>) -> Result<std::size_t> {
        return Fail(ErrorKind::kInvalidRequest, "StreamBodyFromPipe was given no pipe");
      };
    }};
    return *this;
  }
  // The client's own transport reads the pipe itself (internal::PipeLink);
  // this reader is for transports off its event loop.
  body_source = BodySource{[pipe]() -> BodyReader {
                             return [pipe](std::span<char> buffer) {
                               return internal::PipeLink::TakeWaiting(*pipe, buffer);
                             };
                           },
                           std::nullopt, pipe};
  return *this;
}

std::function<BodyReader()> FileReader(std::string path) {
  return [path = std::move(path)]() -> BodyReader {
    std::shared_ptr<std::FILE> file(std::fopen(path.c_str(), "rb"), [](std::FILE* f) {
      if (f != nullptr) std::fclose(f);
    });
    int open_errno = errno;
    return [file, open_errno, path](std::span<char> buffer) -> Result<std::size_t> {
      if (file == nullptr) {
        return Fail(ErrorKind::kInvalidRequest,
                    "cannot open " + path + " for the request body: " + std::strerror(open_errno));
      }
      std::size_t n = std::fread(buffer.data(), 1, buffer.size(), file.get());
      if (n == 0 && std::ferror(file.get()) != 0) {
        return Fail(ErrorKind::kInvalidRequest, "cannot read " + path + " for the request body");
      }
      return n;
    };
  };
}

Result<Response> Require2xx(Result<Response> result) {
  if (!result || result->successful()) return result;
  Error error(ErrorKind::kHttpStatus, "status " + std::to_string(result->status) + ", not 2xx");
  error.set_attempts(result->attempts);
  return tl::unexpected(std::move(error));
}

}  // namespace outbound::http
