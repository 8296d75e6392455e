#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if real time is read anywhere in the library but src/core/system_clock.cc:
# every wait and every "now" must go through the injected Clock. Two kinds
# of read: the standard library's clocks and sleeps, and the library's own
# real clock, SystemClock(), which only a few places may name (below, each
# with its reason).
set -u
root=$1
std_hits=$(grep -rnE 'steady_clock::now|system_clock::now|high_resolution_clock::now|sleep_for|sleep_until|usleep\(|clock_gettime|gettimeofday|[^_a-z]time\(nullptr\)' \
  "$root/src" "$root/include" | grep -v '^'"$root"'/src/core/system_clock.cc:')
# Who may name SystemClock():
#   src/core/system_clock.cc        defines it;
#   include/outbound/clock.h        declares it;
#   include/outbound/runtime.h      a Runtime's default clock (a program's choice);
#   src/testing/fake_server.cc      the kit's server's default clock;
#   src/rpc/client_impl.h           grpc++ runs deadlines on its own real clock.
ours_hits=$(grep -rn 'SystemClock()' "$root/src" "$root/include" | grep -vE \
  '^'"$root"'/(src/core/system_clock\.cc|include/outbound/clock\.h|include/outbound/runtime\.h|src/testing/fake_server\.cc|src/rpc/client_impl\.h):' \
  | grep -vE '//.*SystemClock\(\)')
status=0
if [ -n "$std_hits" ]; then
  echo "real time read outside src/core/system_clock.cc:"
  echo "$std_hits"
  status=1
fi
if [ -n "$ours_hits" ]; then
  echo "SystemClock() named outside the places that may (tests/check_no_real_time.sh):"
  echo "$ours_hits"
  status=1
fi
[ $status -eq 0 ] && echo "only src/core/system_clock.cc reads real time; SystemClock() is named only where allowed"
exit $status
