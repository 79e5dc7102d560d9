# device_assert_costs_nothing: builds tests/gpu/align_cost.cu three ways with nvcc and compares
# the PTX. Off (GPUMEM_DEVICE_CHECKS=0, and NDEBUG alone) must equal no macro at all; on
# (GPUMEM_DEVICE_CHECKS=1) must differ, which shows the comparison can see a difference.
# Needs nvcc, not a GPU. Arguments: -DNVCC= -DSRC= -DINC= -DOUT=
set(variants "none:-DGPUMEM_TEST_NO_MACRO" "off:-DGPUMEM_DEVICE_CHECKS=0" "ndebug:-DNDEBUG"
             "on:-DGPUMEM_DEVICE_CHECKS=1")
file(MAKE_DIRECTORY ${OUT})
foreach(v IN LISTS variants)
  string(REPLACE ":" ";" parts ${v})
  list(GET parts 0 name)
  list(GET parts 1 flag)
  execute_process(COMMAND ${NVCC} -arch=sm_90 -ptx ${flag} -I${INC} ${SRC} -o ${OUT}/${name}.ptx
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nvcc failed for ${name} (${flag})")
  endif()
  file(STRINGS ${OUT}/${name}.ptx lines)
  list(LENGTH lines n)
  message(STATUS "${name}: ${n} lines of PTX")
endforeach()
foreach(name IN ITEMS off ndebug)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/none.ptx ${OUT}/${name}.ptx
                  RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "checks off (${name}) changed the PTX: the macro is not free")
  endif()
endforeach()
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/none.ptx ${OUT}/on.ptx
                RESULT_VARIABLE differ)
if(NOT differ)
  message(FATAL_ERROR "checks on produced the same PTX: the check is missing")
endif()
message(STATUS "device checks off: identical PTX; on: different PTX")
