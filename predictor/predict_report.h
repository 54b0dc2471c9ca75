// SPDX-License-Identifier: MIT
//
// et_predict's reports: a terminal table and a JSON document whose
// `predicted` block sits beside et_replay's report fields (iteration time in
// ms, per op kind, and the shares of compute, exposed communication and
// host overhead).
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "predictor/hw_profile.h"
#include "predictor/predictor.h"

namespace etb::predict {

struct ReportContext {
  std::vector<std::string> argv;
  std::string trace_path;
  std::string profile_path;
  HwIdentity profile;  // its load average, cores and threads
};

void printPrediction(const Prediction& p, const ReportContext& ctx, std::ostream& out);
std::string predictionToJson(const Prediction& p, const ReportContext& ctx);
void writePredictionJson(const Prediction& p, const ReportContext& ctx, const std::string& path);
// One self-contained page: the prediction, its shares as a bar, the op
// kinds by predicted time and the per-rank figures.
void writePredictionHtml(const Prediction& p, const ReportContext& ctx, const std::string& path);

}  // namespace etb::predict
