# The Cloud Bigtable v2 API's .proto files and the C++ code generated from
# them: target tabletfs_bigtable_proto (api/ links it).
#
# The .proto files are never copied into this repository. They come from
# pinned releases of two npm packages, fetched with `npm pack` by exact
# version, their SHA-256 checked, and cached in TABLETFS_NPM_CACHE (default
# ~/.cache/tabletfs/npm, shared by every build directory):
#   @google-cloud/bigtable  google/bigtable/**
#   google-gax              google/api, google/rpc, google/iam,
#                           google/longrunning, google/type
# The well-known types (google/protobuf/*.proto) come from Debian's
# libprotobuf-dev, so that the generated code matches the library it links.
# protoc and grpc_cpp_plugin (Debian: protobuf-compiler,
# protobuf-compiler-grpc) generate the code once per build directory.

set(TABLETFS_BIGTABLE_NPM_VERSION 7.2.0)
set(TABLETFS_BIGTABLE_NPM_SHA256
    e23e0b5a296835d9f24d6bb7bb7cff8c3e944e2e15aa07a057daa5e331b5ef56)
set(TABLETFS_GAX_NPM_VERSION 6.0.0)
set(TABLETFS_GAX_NPM_SHA256
    5d3631a25e95c656d976cf83aca7c9da6327fe50ed68851d88b7cc693ae6e0a2)

if(DEFINED ENV{XDG_CACHE_HOME})
  set(_tabletfs_cache_default $ENV{XDG_CACHE_HOME}/tabletfs/npm)
else()
  set(_tabletfs_cache_default $ENV{HOME}/.cache/tabletfs/npm)
endif()
set(TABLETFS_NPM_CACHE ${_tabletfs_cache_default} CACHE PATH
    "Where the pinned npm packages holding the Bigtable .proto files are kept")

find_program(TABLETFS_PROTOC protoc)
find_program(TABLETFS_GRPC_CPP_PLUGIN grpc_cpp_plugin)
find_program(TABLETFS_NPM npm)
if(NOT TABLETFS_PROTOC OR NOT TABLETFS_GRPC_CPP_PLUGIN)
  message(FATAL_ERROR "protoc and grpc_cpp_plugin not found: apt-get install "
                      "protobuf-compiler protobuf-compiler-grpc")
endif()
tabletfs_require_pkg(grpcpp grpc++ libgrpc++-dev)
tabletfs_require_pkg(protobuf protobuf libprotobuf-dev)
tabletfs_require_pkg(re2 re2 libre2-dev)

# tabletfs_npm_package(<out var: extracted package dir> <name> <version>
#                      <sha256>)
function(tabletfs_npm_package out name version sha256)
  string(REPLACE "@" "" file_stem ${name})
  string(REPLACE "/" "-" file_stem ${file_stem})
  set(tarball ${TABLETFS_NPM_CACHE}/${file_stem}-${version}.tgz)
  if(EXISTS ${tarball})
    file(SHA256 ${tarball} have)
    if(NOT have STREQUAL sha256)
      message(STATUS "${tarball}: checksum ${have} is not the pinned one; "
                     "fetching it again")
      file(REMOVE ${tarball})
    endif()
  endif()
  if(NOT EXISTS ${tarball})
    if(NOT TABLETFS_NPM)
      message(FATAL_ERROR "npm not found (needed once, to fetch ${name}@"
                          "${version}'s .proto files): apt-get install npm")
    endif()
    file(MAKE_DIRECTORY ${TABLETFS_NPM_CACHE})
    message(STATUS "npm pack ${name}@${version} into ${TABLETFS_NPM_CACHE}")
    execute_process(
      COMMAND ${TABLETFS_NPM} pack ${name}@${version} --silent
              --pack-destination ${TABLETFS_NPM_CACHE}
      RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(NOT rc EQUAL 0 OR NOT EXISTS ${tarball})
      message(FATAL_ERROR "npm pack ${name}@${version} failed (${rc}): ${err}")
    endif()
    file(SHA256 ${tarball} have)
    if(NOT have STREQUAL sha256)
      file(REMOVE ${tarball})
      message(FATAL_ERROR "${name}@${version}: SHA-256 ${have}, expected "
                          "${sha256}; refusing it")
    endif()
  endif()
  set(dir ${CMAKE_BINARY_DIR}/_npm/${file_stem}-${version})
  if(NOT EXISTS ${dir}/.extracted-${sha256})
    file(REMOVE_RECURSE ${dir})
    file(ARCHIVE_EXTRACT INPUT ${tarball} DESTINATION ${dir})
    file(TOUCH ${dir}/.extracted-${sha256})
  endif()
  set(${out} ${dir}/package PARENT_SCOPE)
endfunction()

tabletfs_npm_package(_bigtable_pkg @google-cloud/bigtable
                     ${TABLETFS_BIGTABLE_NPM_VERSION}
                     ${TABLETFS_BIGTABLE_NPM_SHA256})
tabletfs_npm_package(_gax_pkg google-gax ${TABLETFS_GAX_NPM_VERSION}
                     ${TABLETFS_GAX_NPM_SHA256})

# One import root holding exactly the files used: google-gax also carries
# its own google/protobuf copies, which must not shadow Debian's.
set(_proto_root ${CMAKE_BINARY_DIR}/_protos)
set(_bigtable_protos
    google/bigtable/v2/bigtable.proto
    google/bigtable/v2/data.proto
    google/bigtable/v2/feature_flags.proto
    google/bigtable/v2/request_stats.proto
    google/bigtable/v2/response_params.proto
    google/bigtable/v2/types.proto
    google/bigtable/admin/v2/bigtable_table_admin.proto
    google/bigtable/admin/v2/common.proto
    google/bigtable/admin/v2/table.proto
    google/bigtable/admin/v2/types.proto)
set(_gax_protos
    google/api/annotations.proto
    google/api/client.proto
    google/api/field_behavior.proto
    google/api/http.proto
    google/api/launch_stage.proto
    google/api/resource.proto
    google/api/routing.proto
    google/iam/v1/iam_policy.proto
    google/iam/v1/options.proto
    google/iam/v1/policy.proto
    google/longrunning/operations.proto
    google/rpc/status.proto
    google/type/date.proto
    google/type/expr.proto)
foreach(p IN LISTS _bigtable_protos)
  configure_file(${_bigtable_pkg}/build/protos/${p} ${_proto_root}/${p} COPYONLY)
endforeach()
foreach(p IN LISTS _gax_protos)
  configure_file(${_gax_pkg}/build/protos/${p} ${_proto_root}/${p} COPYONLY)
endforeach()

# Services are generated for the two API files only.
set(_service_protos google/bigtable/v2/bigtable.proto
    google/bigtable/admin/v2/bigtable_table_admin.proto)
set(_gen_dir ${CMAKE_BINARY_DIR}/gen)
set(_gen_sources)
foreach(p IN LISTS _bigtable_protos _gax_protos)
  string(REGEX REPLACE "\\.proto$" "" stem ${p})
  set(outs ${_gen_dir}/${stem}.pb.cc ${_gen_dir}/${stem}.pb.h)
  set(args --cpp_out=${_gen_dir})
  if(p IN_LIST _service_protos)
    list(APPEND outs ${_gen_dir}/${stem}.grpc.pb.cc ${_gen_dir}/${stem}.grpc.pb.h)
    list(APPEND args --grpc_out=${_gen_dir}
         --plugin=protoc-gen-grpc=${TABLETFS_GRPC_CPP_PLUGIN})
  endif()
  add_custom_command(
    OUTPUT ${outs}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_gen_dir}
    # protoc's notes about unused imports in Google's files are not ours to
    # fix; scripts/protoc-quiet.sh drops them and keeps every other line.
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/protoc-quiet.sh ${TABLETFS_PROTOC}
            -I${_proto_root} -I/usr/include ${args} ${p}
    DEPENDS ${_proto_root}/${p}
    WORKING_DIRECTORY ${_proto_root}
    COMMENT "protoc ${p}"
    VERBATIM)
  list(APPEND _gen_sources ${outs})
endforeach()

add_library(tabletfs_bigtable_proto STATIC ${_gen_sources})
# Generated code: not ours to keep free of warnings, nor to step through
# in a debugger, nor to instrument: the protobuf and gRPC libraries it
# calls into are Debian's, uninstrumented, and sanitizers allow mixing.
# Without debug information and instrumentation its 65,000 lines build
# about 3x faster in the sanitizer builds (the suite's longest part: the
# admin API's file takes 23 s with ASan+UBSan, 7 s without).
target_compile_options(tabletfs_bigtable_proto PRIVATE -w -g0)
if(TABLETFS_SANITIZE)
  target_compile_options(tabletfs_bigtable_proto PRIVATE -fno-sanitize=all)
endif()
target_include_directories(tabletfs_bigtable_proto SYSTEM PUBLIC ${_gen_dir})
target_link_libraries(tabletfs_bigtable_proto PUBLIC tabletfs::grpcpp
                      tabletfs::protobuf)
