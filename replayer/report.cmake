# SPDX-License-Identifier: MIT
# Reporters (terminal, JSON, HTML, Chrome trace), statistics and system
# metrics. Included from replayer/CMakeLists.txt; etb_replay links it.
add_library(etb_report STATIC
  ${CMAKE_CURRENT_LIST_DIR}/stats.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_util.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_svg.cc
  ${CMAKE_CURRENT_LIST_DIR}/system_metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/original_metrics.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_text.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_json.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_html.cc
  ${CMAKE_CURRENT_LIST_DIR}/chrome_trace.cc
  ${CMAKE_CURRENT_LIST_DIR}/report_outputs.cc
)
add_library(etb::report ALIAS etb_report)
set_target_properties(etb_report PROPERTIES POSITION_INDEPENDENT_CODE ON)
target_link_libraries(etb_report
  PUBLIC etb_trace nlohmann_json::nlohmann_json Threads::Threads ${CMAKE_DL_LIBS}
  PRIVATE etb_options)
