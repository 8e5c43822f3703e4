# cuBLASLt for the kernels: the toolkit's own (CUDA::cublasLt) where the
# toolkit ships it; otherwise the copy a Python install carries (PyTorch's
# nvidia-cublas wheel: nvidia/<...>/lib/libcublasLt.so.N with its headers
# beside), since the lent GPU machine reaches no registry to install one.
# Defines the target v41sim_cublaslt, or stops naming what it looked for.
# V41SIM_CUBLASLT_FROM_PYTHON=ON skips the toolkit's copy (to test this path).
option(V41SIM_CUBLASLT_FROM_PYTHON "take cuBLASLt from the Python nvidia-cublas wheel even if the toolkit has it" OFF)

add_library(v41sim_cublaslt INTERFACE)
if(TARGET CUDA::cublasLt AND NOT V41SIM_CUBLASLT_FROM_PYTHON)
  target_link_libraries(v41sim_cublaslt INTERFACE CUDA::cublasLt)
  return()
endif()

execute_process(
  COMMAND python3 -c "import nvidia; print(';'.join(nvidia.__path__))"
  OUTPUT_VARIABLE v41sim_nvidia_dirs OUTPUT_STRIP_TRAILING_WHITESPACE
  RESULT_VARIABLE v41sim_python_status ERROR_QUIET)
set(v41sim_lt_libs "")
set(v41sim_lt_headers "")
if(v41sim_python_status EQUAL 0)
  foreach(dir IN LISTS v41sim_nvidia_dirs)
    file(GLOB_RECURSE libs "${dir}/*/libcublasLt.so*")
    file(GLOB_RECURSE headers "${dir}/*/cublasLt.h")
    list(APPEND v41sim_lt_libs ${libs})
    list(APPEND v41sim_lt_headers ${headers})
  endforeach()
endif()
list(SORT v41sim_lt_libs)
list(SORT v41sim_lt_headers)
list(LENGTH v41sim_lt_libs v41sim_lt_lib_count)
list(LENGTH v41sim_lt_headers v41sim_lt_header_count)
if(v41sim_lt_lib_count EQUAL 0 OR v41sim_lt_header_count EQUAL 0)
  message(FATAL_ERROR "cuBLASLt not found: the CUDA toolkit has no CUDA::cublasLt, and no libcublasLt.so* with "
                      "cublasLt.h was found under the Python package 'nvidia' (dirs: '${v41sim_nvidia_dirs}')")
endif()
list(GET v41sim_lt_libs 0 v41sim_lt_lib)
list(GET v41sim_lt_headers 0 v41sim_lt_header)
get_filename_component(v41sim_lt_include "${v41sim_lt_header}" DIRECTORY)
message(STATUS "cuBLASLt from the Python nvidia-cublas wheel: ${v41sim_lt_lib} (headers ${v41sim_lt_include})")
target_link_libraries(v41sim_cublaslt INTERFACE "${v41sim_lt_lib}")
# After the toolkit's include directory, so its cuda_runtime headers win.
target_include_directories(v41sim_cublaslt SYSTEM AFTER INTERFACE "${v41sim_lt_include}")
