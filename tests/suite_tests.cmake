# SPDX-License-Identifier: Apache-2.0
# Run by ctest, as a directory's TEST_INCLUDE_FILES script, in a build with
# OUTBOUND_TESTS_BY_SUITE (tests/CMakeLists.txt): lists the gtest binary
# `outbound_binary` and adds one ctest test per suite, named
# `<outbound_target>.<Suite>`, running that suite's cases in one process,
# with the labels `outbound_labels`. The cases named in `outbound_excluded`
# (a file of gtest names, one a line, # for comments) are left out of their
# suite's filter: they are the ones a label would keep out of the run.
#
# A binary that cannot list its cases, or lists none, is one test that
# fails: `<target>.NotListed`.
#
# What is lost beside a test per case: a case gtest skips shows in its
# suite's output, not as a skipped ctest test; a suite is one process, so
# what a case leaves behind (a failure that halts the process under a
# sanitizer, a changed limit) reaches the cases after it; and ctest's
# timeout bounds a suite, not a case.
execute_process(COMMAND "${outbound_binary}" --gtest_list_tests
                OUTPUT_VARIABLE outbound_listing ERROR_VARIABLE outbound_listing_error
                RESULT_VARIABLE outbound_listed TIMEOUT 60)
macro(outbound_not_listed)
  add_test("${outbound_target}.NotListed" "${outbound_cmake}" -E false)
  set_tests_properties("${outbound_target}.NotListed" PROPERTIES LABELS "${outbound_labels}")
endmacro()
if(NOT outbound_listed EQUAL 0)
  outbound_not_listed()
  return()
endif()

set(outbound_negative "")
if(outbound_excluded)
  file(STRINGS "${outbound_excluded}" outbound_excluded_names REGEX "^[^#]")
  list(TRANSFORM outbound_excluded_names REPLACE "  #.*$" "")  # a parameter's value
  list(JOIN outbound_excluded_names ":" outbound_negative)
endif()
if(outbound_negative)
  set(outbound_negative "-${outbound_negative}")
endif()

# A suite's line is its name and a dot at the start of a line; a case's is
# indented. Comments (a parameter's value) go first: they may hold anything.
string(REGEX REPLACE "  #[^\n]*" "" outbound_listing "${outbound_listing}")
string(REGEX MATCHALL "[^\n]+" outbound_lines "${outbound_listing}")
set(outbound_any_suite FALSE)
foreach(outbound_line IN LISTS outbound_lines)
  if(NOT outbound_line MATCHES "^([A-Za-z0-9_/]+)\\.$")
    continue()
  endif()
  set(outbound_any_suite TRUE)
  set(outbound_suite "${CMAKE_MATCH_1}")
  set(outbound_name "${outbound_target}.${outbound_suite}")
  add_test("${outbound_name}" "${outbound_binary}"
           "--gtest_filter=${outbound_suite}.*${outbound_negative}")
  set_tests_properties("${outbound_name}" PROPERTIES LABELS "${outbound_labels}")
endforeach()
if(NOT outbound_any_suite)
  outbound_not_listed()
endif()
