// `outbound bench` arrives with the benchmark harness (issue 6).
#include <iostream>

#include "commands.h"

namespace outbound::tool {

int RunBench(const std::vector<std::string>&) {
  std::cerr << "outbound bench: not built yet\n";
  return 1;
}

}  // namespace outbound::tool
