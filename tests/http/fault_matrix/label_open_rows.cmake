# Run by ctest after the fault matrix's tests are discovered (the directory's
# TEST_INCLUDE_FILES): every row named in open_rows.txt gets the label
# matrix_open as well as fault_matrix. A name no longer discovered is skipped.
file(STRINGS "${CMAKE_CURRENT_LIST_DIR}/open_rows.txt" outbound_open_rows REGEX "^[^#]")
foreach(row IN LISTS outbound_open_rows)
  string(STRIP "${row}" row)
  if(row IN_LIST fault_matrix_test_TESTS)
    set_tests_properties("${row}" PROPERTIES LABELS "fault_matrix;matrix_open")
  endif()
endforeach()
