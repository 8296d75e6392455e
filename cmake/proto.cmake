# SPDX-License-Identifier: Apache-2.0
# outbound_proto(TARGET PROTO): compiles PROTO (a path relative to the
# calling directory) with protoc alone into an OBJECT library TARGET whose
# users include "<name>.pb.h": the messages a gRPC client of outbound's
# needs, no gRPC plugin. Generated code is built without the project's
# warnings.
include_guard(GLOBAL)
find_package(PkgConfig REQUIRED)
find_program(OUTBOUND_PROTOC protoc REQUIRED)
pkg_check_modules(PROTOBUF REQUIRED IMPORTED_TARGET GLOBAL protobuf)

function(outbound_proto target proto)
  get_filename_component(proto_path ${proto} ABSOLUTE)
  get_filename_component(proto_dir ${proto_path} DIRECTORY)
  get_filename_component(name ${proto} NAME_WE)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/${target}_gen)
  add_custom_command(
    OUTPUT ${gen}/${name}.pb.cc ${gen}/${name}.pb.h
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}
    COMMAND ${OUTBOUND_PROTOC} --cpp_out=${gen} -I ${proto_dir} ${proto_path}
    DEPENDS ${proto_path}
    COMMENT "protoc ${name}.proto")
  add_library(${target} OBJECT ${gen}/${name}.pb.cc)
  target_include_directories(${target} PUBLIC ${gen})
  target_link_libraries(${target} PUBLIC PkgConfig::PROTOBUF)
endfunction()
