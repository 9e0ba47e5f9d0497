# Runs `ar -M` on an MRI script (cmake -DAR=... -DMRI=... -P this file):
# the script merges archives into one (cmake/boltpack_read.cmake).
execute_process(COMMAND ${AR} -M INPUT_FILE ${MRI} RESULT_VARIABLE _result)
if(NOT _result EQUAL 0)
  message(FATAL_ERROR "ar -M ${MRI} failed: ${_result}")
endif()
