# SPDX-License-Identifier: Apache-2.0
# outbound_grpc_proto(TARGET PROTO): compiles PROTO (a path relative to the
# calling directory) with protoc and grpc_cpp_plugin into an OBJECT library
# TARGET whose users include "<name>.pb.h" and "<name>.grpc.pb.h". The rpc
# tests and the gRPC benchmark both build tests/rpc/echo.proto this way.
# Generated code is built without the project's warnings. grpc++ is for
# these peers only: the library itself does not link it.
include_guard(GLOBAL)
include(${CMAKE_CURRENT_LIST_DIR}/proto.cmake)
pkg_check_modules(GRPCPP REQUIRED IMPORTED_TARGET GLOBAL grpc++)
find_program(OUTBOUND_GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)

function(outbound_grpc_proto target proto)
  get_filename_component(proto_path ${proto} ABSOLUTE)
  get_filename_component(proto_dir ${proto_path} DIRECTORY)
  get_filename_component(name ${proto} NAME_WE)
  set(gen ${CMAKE_CURRENT_BINARY_DIR}/${target}_gen)
  set(files ${gen}/${name}.pb.cc ${gen}/${name}.pb.h ${gen}/${name}.grpc.pb.cc
            ${gen}/${name}.grpc.pb.h)
  add_custom_command(
    OUTPUT ${files}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${gen}
    COMMAND ${OUTBOUND_PROTOC} --cpp_out=${gen} --grpc_out=${gen}
            --plugin=protoc-gen-grpc=${OUTBOUND_GRPC_CPP_PLUGIN} -I ${proto_dir} ${proto_path}
    DEPENDS ${proto_path}
    COMMENT "protoc ${name}.proto")
  add_library(${target} OBJECT ${gen}/${name}.pb.cc ${gen}/${name}.grpc.pb.cc)
  target_include_directories(${target} PUBLIC ${gen})
  target_link_libraries(${target} PUBLIC PkgConfig::GRPCPP PkgConfig::PROTOBUF)
endfunction()
