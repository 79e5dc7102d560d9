# gpumem_add_check_test(NAME COMMAND program [args...]
#                       [ERROR_EXITCODE n] [CHECK_OPTIONS opt...] [WORKING_DIRECTORY dir])
#
# A CTest test that runs the command under `gpumem check --error-exitcode=n` (default 99): it
# fails when the program fails or when gpumem check finds an error (a leak, a wrong release,
# a failed allocation...). Without a GPU, gpumem check exits 77, which the test reports as
# skipped. program may be a target of the project. CHECK_OPTIONS go to gpumem check, e.g.
# --suppressions=${CMAKE_CURRENT_SOURCE_DIR}/my.supp or --leak-check=summary.
function(gpumem_add_check_test name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "ERROR_EXITCODE;WORKING_DIRECTORY"
    "COMMAND;CHECK_OPTIONS")
  if(NOT arg_COMMAND)
    message(FATAL_ERROR "gpumem_add_check_test(${name}): COMMAND is missing (gpumem_add_check_test(${name} COMMAND program args...))")
  endif()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "gpumem_add_check_test(${name}): unknown arguments ${arg_UNPARSED_ARGUMENTS} (known: COMMAND, ERROR_EXITCODE, CHECK_OPTIONS, WORKING_DIRECTORY)")
  endif()
  if(NOT DEFINED arg_ERROR_EXITCODE)
    set(arg_ERROR_EXITCODE 99)
  endif()
  if(NOT arg_ERROR_EXITCODE MATCHES "^[0-9]+$" OR arg_ERROR_EXITCODE GREATER 255
     OR arg_ERROR_EXITCODE EQUAL 0 OR arg_ERROR_EXITCODE EQUAL 77)
    message(FATAL_ERROR "gpumem_add_check_test(${name}): ERROR_EXITCODE takes a number from 1 to 255 other than 77 (which means skipped), not '${arg_ERROR_EXITCODE}'")
  endif()
  list(POP_FRONT arg_COMMAND program)
  if(TARGET ${program})
    set(program "$<TARGET_FILE:${program}>")
  endif()
  set(workdir "")
  if(arg_WORKING_DIRECTORY)
    set(workdir WORKING_DIRECTORY ${arg_WORKING_DIRECTORY})
  endif()
  add_test(NAME ${name} ${workdir}
    COMMAND $<TARGET_FILE:gpumem::gpumem_cli> check --error-exitcode=${arg_ERROR_EXITCODE}
      ${arg_CHECK_OPTIONS} -- ${program} ${arg_COMMAND})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77)
endfunction()
