#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Fails if real time is read anywhere in the library but system_clock.cc:
# every wait and every "now" must go through the injected Clock.
set -u
root=$1
hits=$(grep -rnE 'steady_clock::now|system_clock::now|high_resolution_clock::now|sleep_for|sleep_until|usleep\(' \
  "$root/src" "$root/include" | grep -v '^'"$root"'/src/core/system_clock.cc:')
if [ -n "$hits" ]; then
  echo "real time read outside src/core/system_clock.cc:"
  echo "$hits"
  exit 1
fi
echo "only src/core/system_clock.cc reads real time"
