# The C API as a project outside tapdiff uses it: install tapdiff into a prefix, build
# examples/c-api against the installed CMake package (find_package(tapdiff)), and have its program
# copy a `tapdiff run` dump through the C API's reader and writer; `tapdiff compare` must match.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -P tests/c_api_example.cmake
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT code EQUAL 0)
    message(FATAL_ERROR "${ARGN}\nexit ${code}\n${out}\n${err}")
  endif()
  set(output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR}/examples/c-api -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
set(tapdiff ${WORK_DIR}/prefix/bin/tapdiff)
run(${tapdiff} synth -o ${WORK_DIR}/tiny.gguf --shape tiny)
run(${tapdiff} run --model ${WORK_DIR}/tiny.gguf --tokens 1,5,9,13,17,21,25,29,33,37 --chunk 4 --generate 3
    --dump ${WORK_DIR}/ref.h5)
run(${WORK_DIR}/build/copy_dump ${WORK_DIR}/ref.h5 ${WORK_DIR}/tiny.gguf ${WORK_DIR}/c.h5)
run(${tapdiff} compare ${WORK_DIR}/ref.h5 ${WORK_DIR}/c.h5)
if(NOT output MATCHES "^match: ")
  message(FATAL_ERROR "tapdiff compare: expected a match, found:\n${output}")
endif()
message(STATUS "${output}")
