# SPDX-License-Identifier: MIT
# et_replay itself under real mpirun (label mpi): per-rank trace sets, the
# fleet DDP sample, the PARAM 8-rank DLRM set, sub-groups, and the failures
# that must end the job (world-size mismatch, pre-flight mismatch, a rank
# failing mid-replay, a rank stuck past --comm-timeout). Each case is one run of et_replay_case.sh; it wraps mpirun in
# `timeout`, so a hang fails the test rather than the suite. Exit 77 = skip.
if(NOT TARGET et_replay)
  return()
endif()

set(ETB_ET_REPLAY_CASE ${CMAKE_CURRENT_SOURCE_DIR}/et_replay_case.sh)
foreach(case ddp2 heap dlrm ring groups world preflight throw stall)
  add_test(NAME mpi_et_replay_${case}
           COMMAND ${ETB_ET_REPLAY_CASE} ${case} $<TARGET_FILE:et_replay> ${PROJECT_SOURCE_DIR})
  set_tests_properties(mpi_et_replay_${case} PROPERTIES LABELS mpi TIMEOUT 300
                       SKIP_RETURN_CODE 77 ENVIRONMENT "${ETB_MPI_ENV}")
endforeach()

# DDP over gloo, recorded at 2 and 4 ranks, replayed on gloo with per-rank profiler files.
if(ETB_WITH_GLOO)
  foreach(case gloo:ddp_mlp2:2 gloo:ddp_mlp4:4 gloo:ddp_transformer2:2 gloo:ddp_transformer4:4
               host:ddp_transformer2:2)
    string(REPLACE ":" "_" test_name "mpi_et_replay_${case}")
    add_test(NAME ${test_name}
             COMMAND ${ETB_ET_REPLAY_CASE} ${case} $<TARGET_FILE:et_replay> ${PROJECT_SOURCE_DIR})
    set_tests_properties(${test_name} PROPERTIES LABELS mpi TIMEOUT 300
                         SKIP_RETURN_CODE 77 ENVIRONMENT "${ETB_MPI_ENV}")
  endforeach()
endif()
add_test(NAME mpi_et_replay_kineto_missing
         COMMAND ${ETB_ET_REPLAY_CASE} kineto_missing $<TARGET_FILE:et_replay> ${PROJECT_SOURCE_DIR})
set_tests_properties(mpi_et_replay_kineto_missing PROPERTIES LABELS mpi TIMEOUT 120
                     ENVIRONMENT "${ETB_MPI_ENV}")

# Baseline of scripts/bench_comm_replay.sh: the benchmark trace's calls as a
# plain MPI loop.
add_executable(etb_mpi_plain_loop mpi_plain_loop.cc)
target_link_libraries(etb_mpi_plain_loop PRIVATE MPI::MPI_CXX etb_options)
