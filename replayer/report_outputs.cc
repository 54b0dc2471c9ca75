// SPDX-License-Identifier: MIT
#include "replayer/report_outputs.h"

#include "replayer/chrome_trace.h"
#include "replayer/report_html.h"
#include "replayer/report_json.h"
#include "replayer/report_text.h"

namespace etb::replay {

void writeReports(const ReplayResult& result, const ReportOutputs& outputs, std::ostream& terminal) {
  if (outputs.terminal) printReport(result, terminal);
  if (!outputs.json.empty()) writeReportJson(result, outputs.json);
  if (!outputs.html.empty()) writeReportHtml(result, outputs.html);
  if (!outputs.chrome_trace.empty()) writeChromeTrace(result, outputs.chrome_trace);
}

}  // namespace etb::replay
