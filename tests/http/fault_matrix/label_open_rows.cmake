# SPDX-License-Identifier: Apache-2.0
# Run by ctest after the fault matrix's tests are discovered (the directory's
# TEST_INCLUDE_FILES): every row named in open_rows.txt gets the label
# matrix_open as well as fault_matrix. Rows are named as gtest names them;
# CMake 3.25 appends "  # GetParam() = ..." to the ctest name of a
# parameterised row, which is ignored here. A name no longer discovered is
# skipped.
cmake_policy(PUSH)
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST): ctest reads this with no policy set
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/open_rows.txt" outbound_open_rows REGEX "^[^#]")
foreach(test IN LISTS fault_matrix_test_TESTS)
  string(REGEX REPLACE "  # GetParam\\(\\) = .*$" "" row "${test}")
  if(row IN_LIST outbound_open_rows)
    set_tests_properties("${test}" PROPERTIES LABELS "fault_matrix;matrix_open")
  endif()
endforeach()
cmake_policy(POP)
