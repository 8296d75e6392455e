// SPDX-License-Identifier: Apache-2.0
// The test services' methods, by the full name a call gives: the Echo
// service of tests/rpc/echo.proto, and a cart service the fakes answer.
#ifndef OUTBOUND_TESTS_RPC_METHODS_H_
#define OUTBOUND_TESTS_RPC_METHODS_H_

namespace outbound::rpc {

inline constexpr char kSay[] = "/outbound.test.Echo/Say";
inline constexpr char kCount[] = "/outbound.test.Echo/Count";
inline constexpr char kCollect[] = "/outbound.test.Echo/Collect";
inline constexpr char kChat[] = "/outbound.test.Echo/Chat";

inline constexpr char kGet[] = "/cart.v1.Carts/Get";
inline constexpr char kCharge[] = "/cart.v1.Carts/Charge";
inline constexpr char kWatch[] = "/cart.v1.Carts/Watch";

}  // namespace outbound::rpc

#endif  // OUTBOUND_TESTS_RPC_METHODS_H_
