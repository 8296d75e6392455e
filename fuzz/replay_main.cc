// SPDX-License-Identifier: Apache-2.0
// fuzz/replay_main.cc
//
// The `main` of a fuzz target built without libFuzzer: it runs every file of
// the directories (or the files) it is given through LLVMFuzzerTestOneInput,
// in name order, once each. Linked into each target's `_replay` executable,
// which ctest runs on the target's corpus as `fuzz.<target>_corpus`, so every
// build (g++, and under ASan+UBSan) checks the properties on every seed and
// every input that once failed.
//
//   fuzz_origin_replay fuzz/corpus/origin
//
// The inputs run in a child process, so that one failing input (a failed
// property aborts; a sanitizer report ends the process) does not hide the
// next: after a failure, a new child goes on with the next input. The replay
// names every input that failed, and exits 1 if any did.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <utility>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

std::vector<std::filesystem::path> InputsUnder(const std::filesystem::path& path) {
  std::vector<std::filesystem::path> inputs;
  if (std::filesystem::is_directory(path)) {
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (entry.is_regular_file()) inputs.push_back(entry.path());
    }
    std::sort(inputs.begin(), inputs.end());
  } else if (std::filesystem::is_regular_file(path)) {
    inputs.push_back(path);
  }
  return inputs;
}

// The bytes of `input`, or empty if it cannot be read.
std::optional<std::string> Contents(const std::filesystem::path& input) {
  std::ifstream file(input, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (!file && !file.eof()) return std::nullopt;
  return bytes;
}

// Runs inputs[from], inputs[from + 1]... through the target in one child
// process, which reports each index on a pipe before running that input.
// Returns the index of the input the child died on, inputs.size() if it
// died after the last one (LeakSanitizer reports at exit), or empty if every
// input ran and the child exited cleanly.
std::optional<std::size_t> ReplayFrom(const std::vector<std::string>& inputs, std::size_t from) {
  int progress[2];
  if (pipe(progress) != 0) {
    std::perror("pipe");
    return from;
  }
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t child = fork();
  if (child < 0) {
    std::perror("fork");
    return from;
  }
  if (child == 0) {
    close(progress[0]);
    for (std::size_t i = from; i <= inputs.size(); ++i) {
      if (write(progress[1], &i, sizeof i) != static_cast<ssize_t>(sizeof i)) _exit(3);
      if (i == inputs.size()) break;
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(inputs[i].data()),
                             inputs[i].size());
    }
    std::fflush(stdout);
    // exit, not _exit: LeakSanitizer checks at exit.
    std::exit(0);
  }
  close(progress[1]);
  std::size_t last = from;
  std::size_t index = 0;
  while (read(progress[0], &index, sizeof index) == static_cast<ssize_t>(sizeof index)) {
    last = index;
  }
  close(progress[0]);
  int status = 0;
  bool clean = waitpid(child, &status, 0) == child && WIFEXITED(status) &&
               WEXITSTATUS(status) == 0 && last == inputs.size();
  if (clean) return std::nullopt;
  return last;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  std::vector<std::filesystem::path> paths;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> found = InputsUnder(argv[i]);
    // An empty or missing corpus would pass without checking anything.
    if (found.empty()) {
      std::fprintf(stderr, "%s: no inputs in %s\n", argv[0], argv[i]);
      return 1;
    }
    paths.insert(paths.end(), found.begin(), found.end());
  }
  std::vector<std::string> inputs;
  for (const auto& path : paths) {
    std::optional<std::string> bytes = Contents(path);
    if (!bytes) {
      std::fprintf(stderr, "%s: cannot read %s\n", argv[0], path.c_str());
      return 1;
    }
    inputs.push_back(std::move(*bytes));
  }

  // One process for the whole corpus; after a failure, a new one from the
  // input after the failed one.
  std::vector<std::string> failed;
  std::size_t from = 0;
  while (from < inputs.size()) {
    std::optional<std::size_t> died = ReplayFrom(inputs, from);
    if (!died) break;
    if (*died == inputs.size()) {
      failed.push_back("(at exit, after the last input: a leak?)");
      break;
    }
    std::fprintf(stderr, "FAILED: %s\n", paths[*died].c_str());
    failed.push_back(paths[*died].string());
    from = *died + 1;
  }
  if (!failed.empty()) {
    std::fprintf(stderr, "%zu of %zu inputs failed:\n", failed.size(), inputs.size());
    for (const auto& input : failed) std::fprintf(stderr, "  %s\n", input.c_str());
    return 1;
  }
  std::printf("%zu inputs, every property held\n", inputs.size());
  return 0;
}
