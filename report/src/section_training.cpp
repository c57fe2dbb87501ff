// Section 3: the scaling study, and the 6.4 M sweep until a study size is complete.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "nibble/analysis/chain.h"
#include "nibble/analysis/quant_matrix.h"
#include "nibble/analysis/render.h"
#include "nibble/analysis/synthetic.h"
#include "nibble/formats.h"
#include "nibble/stats.h"
#include "sections.h"

namespace nibble::report::detail {
namespace fs = std::filesystem;

namespace {

std::string spread_text(const nlohmann::json& j, int decimals, double scale = 1.0) {
  if (!j.is_object() || !j.contains("mean") || !j["mean"].is_number()) return "-";
  std::string s = fixed(j["mean"].get<double>() * scale, decimals);
  if (j.contains("std") && j["std"].is_number()) s += " ± " + fixed(j["std"].get<double>() * scale, decimals);
  if (j.contains("min") && j["min"].is_number() && j.contains("max") && j["max"].is_number()) {
    s += fmt::format(" [{}, {}]", fixed(j["min"].get<double>() * scale, decimals),
                     fixed(j["max"].get<double>() * scale, decimals));
  }
  return s;
}

// The recorded 6.4 M sweep (training/summary.json), or one the report ran now.
Section sweep_section(const ReportOptions& o, const Writer& w, const TrainingData& training,
                      std::vector<RecipeGap>& gaps) {
  Section s;
  s.id = "training";
  s.title = prose("training", "title");
  if (!training.present) {
    mark_absent(s, "training", prose("training", "absent_what"), training.problem, prose("training", "absent_how"));
    return s;
  }
  const nlohmann::json& sum = training.summary;
  auto str = [](const nlohmann::json& j, const char* k) {
    return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
  };
  std::string device = str(sum, "device");
  std::string gpu;
  for (const char* k : {"gpu", "gpu_name", "device_name"}) {
    if (gpu.empty()) gpu = str(sum, k);
  }
  std::string command = str(sum, "command");
  // The GPU's name, where summary.json does not carry it: the first run's run.json.
  std::string run_device;
  if (gpu.empty()) {
    for (const auto& rec : sum["recipes"]) {
      if (!run_device.empty() || !rec.is_object() || !rec.contains("runs") || !rec["runs"].is_array()) continue;
      for (const auto& run : rec["runs"]) {
        const fs::path rj = fs::path(training_dir(o)) / str(run, "dir") / "run.json";
        if (str(run, "dir").empty() || !fs::exists(rj)) continue;
        try {
          const nlohmann::json j = read_json(rj.string());
          for (const char* k : {"gpu", "gpu_name", "device_name", "device"}) {
            if (run_device.empty() && j.contains(k)) run_device = j[k].is_string() ? j[k].get<std::string>() : j[k].dump();
          }
        } catch (const ReportError&) {  // an unreadable run.json: look at the next run
        }
        if (!run_device.empty()) break;
      }
    }
  }
  if (gpu.empty() && !run_device.empty() && run_device != device) gpu = run_device + " (from run.json)";
  s.source = prose("training", "source_sweep",
                   {{"fresh", o.training_fresh}, {"path", (fs::path(training_dir(o)) / "summary.json").string()}});
  TemplateValues intro = {{"device", device.empty() ? prose("training", "device_not_recorded") : device}};
  // Absent, not empty, where not recorded: an empty string opens a Mustache section.
  if (!gpu.empty()) intro["gpu"] = gpu;
  if (!command.empty()) intro["command"] = command;
  if (!training.problem.empty()) intro["problem"] = training.problem;
  s.intro_html = prose("training", "sweep_intro", intro) + "\n";
  const int last_n = sum.contains("metric") && sum["metric"].is_object() && sum["metric"].contains("last_n") &&
                             sum["metric"]["last_n"].is_number()
                         ? sum["metric"]["last_n"].get<int>()
                         : 0;
  TemplateValues gap_caption;
  if (last_n) gap_caption["last_n"] = std::to_string(last_n);
  Table t{"training_gap", prose("training", "gap_table_caption", gap_caption),
          {"recipe", "description", "seeds", "loss gap to BF16 (%)", "final loss", "final val loss", "step time vs BF16"},
          {}};
  const fs::path base = training_dir(o);
  std::vector<std::string> curve_names;
  std::map<long, std::vector<double>> curves;  // step -> per recipe mean loss
  std::string problems;
  for (const auto& rec : sum["recipes"]) {
    if (!rec.is_object()) continue;
    const std::string nm = str(rec, "name");
    const nlohmann::json gap = rec.value("gap", nlohmann::json());
    std::string n = gap.is_object() && gap.contains("n") ? gap["n"].dump() : "-";
    t.rows.push_back({nm, str(rec, "description"), n, spread_text(gap, 3, 100.0),
                      spread_text(rec.value("final_loss", nlohmann::json()), 4),
                      spread_text(rec.value("final_val_loss", nlohmann::json()), 4),
                      rec.contains("step_time_vs_bf16") && rec["step_time_vs_bf16"].is_number()
                          ? fixed(rec["step_time_vs_bf16"].get<double>(), 2) + "x"
                          : "-"});
    if (gap.is_object() && gap.contains("mean") && gap["mean"].is_number()) {
      gaps.push_back({nm, gap["mean"].get<double>(), gap.contains("std") && gap["std"].is_number() ? gap["std"].get<double>() : 0});
    }
    // Mean loss curve over the recipe's seeds.
    std::map<long, std::pair<double, int>> acc;
    if (rec.contains("runs") && rec["runs"].is_array()) {
      for (const auto& run : rec["runs"]) {
        const std::string rel = str(run, "loss_csv");
        if (rel.empty()) continue;
        try {
          const auto rows = read_csv((base / rel).string());
          if (rows.empty()) continue;
          size_t cs = 0, cl = 1;
          for (size_t i = 0; i < rows[0].size(); ++i) {
            if (rows[0][i] == "step") cs = i;
            if (rows[0][i] == "loss") cl = i;
          }
          for (size_t i = 1; i < rows.size(); ++i) {
            const long step = std::stol(rows[i].at(cs));
            acc[step].first += std::stod(rows[i].at(cl));
            acc[step].second += 1;
          }
        } catch (const std::exception& e) {
          problems += fmt::format("{}: {}; ", (base / rel).string(), e.what());
        }
      }
    }
    if (!acc.empty()) {
      const size_t idx = curve_names.size();
      curve_names.push_back(nm);
      for (const auto& [step, v] : acc) {
        auto& row = curves[step];
        row.resize(idx + 1, std::nan(""));
        row[idx] = v.first / v.second;
      }
    }
  }
  s.tables.push_back(t);
  if (!curve_names.empty()) {
    std::vector<std::string> columns = {"step"};
    columns.insert(columns.end(), curve_names.begin(), curve_names.end());
    io::CsvTable csv(columns);
    for (auto& [step, row] : curves) {
      row.resize(curve_names.size(), std::nan(""));
      std::vector<io::CsvCell> cells = {step};
      cells.insert(cells.end(), row.begin(), row.end());
      csv.add(cells);
    }
    w.text("data/training_loss.csv", csv.text());
    s.figures.push_back({"training_loss", prose("training", "loss_title"), prose("training", "loss_caption"),
                         fmt::format("set xlabel 'step'\nset ylabel 'training loss'\nset logscale y\n"
                                     "set key autotitle columnhead\nplot for [i=2:{}] 'data/training_loss.csv' "
                                     "using 1:i with lines lw 1.5\n",
                                     curve_names.size() + 1)});
  }
  if (!problems.empty()) s.notes_html += prose("training", "unreadable_loss", {{"problems", problems}}) + "\n";
  return s;
}

// A gap or difference (a fraction) in percentage points with its t interval: "+0.123 ± 0.045 [+0.078, +0.168]".
std::string points_ci(const nlohmann::json& m) {
  auto num = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_number() ? j[k].get<double>() : std::nan("");
  };
  const double mean = num(m, "mean");
  if (!std::isfinite(mean)) return "-";
  const double hw = num(m, "ci_half_width");
  if (!std::isfinite(hw)) return fmt::format("{:+.3f} (one seed)", 100 * mean);
  return fmt::format("{:+.3f} ± {:.3f} [{:+.3f}, {:+.3f}]", 100 * mean, 100 * hw, 100 * num(m, "ci_lo"),
                     100 * num(m, "ci_hi"));
}

// The scaling study (training/study/summary.json): the gap per size and arm, the paired
// differences beside the paper's effect, the ablations and the run count. `complete`
// receives the sizes whose runs are all done.
void add_study(Section& s, const Writer& w, const StudyData& study, std::vector<std::string>& complete) {
  const nlohmann::json& sum = study.summary;
  auto str = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string("-");
  };
  auto count = [](const nlohmann::json& j, const char* k) {
    return j.is_object() && j.contains(k) && j[k].is_number_integer() ? j[k].get<int64_t>() : int64_t{0};
  };
  std::vector<std::string> incomplete;
  std::string reduced_html;
  Table gaps{"training_study_gap", prose("training", "study_gap_table_caption"),
             {"size", "recipe", "runs finished / diverged / started", "g (pp)", "g, BF16 forward of the same weights (pp)",
              "cumulative α across depth, Fprop / Dgrad / Wgrad"},
             {}};
  const nlohmann::json boot_meta =
      sum.contains("metric") && sum["metric"].is_object() ? sum["metric"].value("bootstrap", nlohmann::json()) : nlohmann::json();
  Table pairs{"training_study_pairs",
              prose("training", "study_pairs_table_caption",
                    {{"resamples", std::to_string(count(boot_meta, "resamples"))},
                     {"seed", std::to_string(count(boot_meta, "seed"))},
                     {"effect_percent", fmt::format("{:.0f}", 100 * published::kUfp4TrainingEffect)},
                     {"paper", std::string(published::kUfp4)}}),
              {"size", "d = g_a − g_b", "question", "seeds", "d (pp), t interval", "bootstrap interval", "p",
               "verdict", "paper's d (pp)", "seeds for the CI target"},
              {}};
  io::CsvTable csv({"size", "params", "recipe", "g_pp", "ci_lo_pp", "ci_hi_pp"});
  int plotted = 0;
  for (const auto& z : sum["sizes"]) {
    if (!z.is_object()) continue;
    const std::string size = str(z, "name");
    (z.value("complete", false) ? complete : incomplete).push_back(size);
    // A size that runs fewer seeds than the study's minimum says so beside its results.
    const nlohmann::json& seeds = z.value("seeds", nlohmann::json::object());
    if (seeds.is_object() && seeds.value("reduced_reason", nlohmann::json()).is_string() &&
        seeds.value("main", nlohmann::json()).is_array()) {
      std::vector<std::string> list;
      for (const auto& x : seeds["main"]) list.push_back(x.is_number_unsigned() ? std::to_string(x.get<uint64_t>()) : "?");
      reduced_html += prose("training", "study_reduced",
                            {{"size", size},
                             {"seeds", fmt::format("{}", fmt::join(list, ", "))},
                             {"min", std::to_string(count(seeds, "study_min"))},
                             {"reason", seeds["reduced_reason"].get<std::string>()}}) +
                      "\n";
    }
    if (z.contains("arms") && z["arms"].is_array()) {
      for (const auto& a : z["arms"]) {
        const nlohmann::json& runs = a.value("runs", nlohmann::json::object());
        std::string att = "-";
        if (a.contains("attenuation") && a["attenuation"].is_object() && !a["attenuation"].empty()) {
          att.clear();
          for (const char* g : {"fprop", "dgrad", "wgrad"}) {
            const nlohmann::json& x = a["attenuation"].value(g, nlohmann::json::object());
            att += (att.empty() ? "" : " / ") +
                   (x.contains("cum_alpha_last_layer") && x["cum_alpha_last_layer"].is_number()
                        ? fixed(x["cum_alpha_last_layer"].get<double>(), 3)
                        : std::string("-"));
          }
        }
        const bool base = !a.contains("gap");
        gaps.rows.push_back({size, str(a, "recipe"),
                             fmt::format("{} / {} / {} of {}", count(runs, "finished"), count(runs, "diverged"),
                                         count(runs, "started"), count(runs, "planned")),
                             base ? "0 (baseline)" : points_ci(a["gap"]),
                             base ? "-" : points_ci(a.value("gap_bf16_forward", nlohmann::json())), att});
        if (!base && a["gap"].is_object() && a["gap"].value("mean", nlohmann::json()).is_number()) {
          const auto& g = a["gap"];
          const double lo = g.value("ci_lo", nlohmann::json()).is_number() ? g["ci_lo"].get<double>() : g["mean"].get<double>();
          const double hi = g.value("ci_hi", nlohmann::json()).is_number() ? g["ci_hi"].get<double>() : g["mean"].get<double>();
          csv.add({size, count(z, "quantized_linear_parameters"), str(a, "recipe"), 100 * g["mean"].get<double>(),
                   100 * lo, 100 * hi});
          ++plotted;
        }
      }
    }
    if (z.contains("pairs") && z["pairs"].is_array()) {
      for (const auto& p : z["pairs"]) {
        const nlohmann::json& d = p.value("d", nlohmann::json::object());
        std::string boot = "-";
        if (p.contains("bootstrap") && p["bootstrap"].is_object()) {
          const auto& b = p["bootstrap"];
          boot = fmt::format("[{:+.3f}, {:+.3f}]", 100 * b.value("ci_lo", 0.0), 100 * b.value("ci_hi", 0.0));
        }
        std::string paper = "-";
        if (p.contains("paper_d") && p["paper_d"].is_number()) {
          paper = fmt::format("{:+.3f}", 100 * p["paper_d"].get<double>());
          if (p.contains("paper_within_ci")) {
            paper += p["paper_within_ci"].get<bool>() ? " (inside the interval)" : " (outside the interval)";
          }
        }
        pairs.rows.push_back(
            {size, str(p, "a") + " − " + str(p, "b"), str(p, "question"), std::to_string(count(d, "n")),
             points_ci(d), boot,
             p.contains("t_test") && p["t_test"].value("p", nlohmann::json()).is_number()
                 ? fmt::format("{:.3g}", p["t_test"]["p"].get<double>())
                 : "-",
             str(p, "verdict"), paper,
             p.contains("seeds_needed") ? std::to_string(count(p, "seeds_needed")) : std::string("-")});
      }
    }
  }
  const nlohmann::json& runs = sum.value("runs", nlohmann::json::object());
  s.intro_html += prose("training", "study_intro",
                        {{"study", str(sum, "study")},
                         {"sizes", std::to_string(sum["sizes"].size())},
                         {"planned", std::to_string(count(runs, "planned"))},
                         {"started", std::to_string(count(runs, "started"))},
                         {"finished", std::to_string(count(runs, "finished"))},
                         {"diverged", std::to_string(count(runs, "diverged"))},
                         {"outside", count(runs, "outside_plan") > 0
                                         ? TemplateData(std::to_string(count(runs, "outside_plan")))
                                         : TemplateData(false)},
                         {"complete", template_series(complete)},
                         {"incomplete", template_series(incomplete)}}) +
                  "\n" + reduced_html;
  s.tables.push_back(gaps);
  s.tables.push_back(pairs);
  if (plotted > 0) {
    w.text("data/training_study_gap.csv", csv.text());
    s.figures.push_back(
        {"training_study_gap", prose("training", "study_gap_title"), prose("training", "study_gap_caption"),
         "set key autotitle columnhead\nset logscale x\nset xlabel 'quantized-linear "
         "parameters'\nset ylabel 'g = (L - L_bf16)/L_bf16 (pp)'\nset key outside right\n"
         "plot for [r in 'e2m1 ufp4 e2m1+rht=all ufp4+rht=wgrad nvfp4'] 'data/training_study_gap.csv' "
         "using ($2):(strcol(3) eq r ? $4 : NaN):(strcol(3) eq r ? $5 : NaN):(strcol(3) eq r ? $6 : NaN) "
         "with yerrorlines title r\n"});
  }
}

}  // namespace

// Section 3: the scaling study where its summary is recorded, and the 6.4 M sweep until a
// size of the study is complete.
Section training_section(ReportContext& ctx) {
  const ReportOptions& o = ctx.options;
  const Writer& w = ctx.writer;
  const TrainingData& training = ctx.training;
  const StudyData& study = ctx.study;
  std::vector<RecipeGap>& gaps = ctx.gaps;
  std::vector<std::string> complete;
  if (!study.present) {
    Section s = sweep_section(o, w, training, gaps);
    s.notes_html += prose("training", "no_study", {{"problem", study.problem}}) + "\n";
    return s;
  }
  Section study_part;
  add_study(study_part, w, study, complete);
  Section s;
  if ((complete.empty() || o.training_fresh) && training.present) {
    s = sweep_section(o, w, training, gaps);
    s.intro_html = study_part.intro_html + prose("training", "sweep_below", {{"complete", !complete.empty()}}) +
                   "\n" + s.intro_html;
    s.source = prose("training", "source_study_and_sweep", {{"source", s.source}, {"path", study.path}});
  } else {
    s.id = "training";
    s.title = prose("training", "title");
    s.source = prose("training", "source_study", {{"path", study.path}});
    s.intro_html = study_part.intro_html;
    if (!complete.empty()) {
      s.intro_html += prose("training", "sweep_retired") + "\n";
      // The trade-off takes the gaps of the largest complete size.
      for (const auto& z : study.summary["sizes"]) {
        if (!z.is_object() || z.value("name", "") != complete.back()) continue;
        for (const auto& a : z.value("arms", nlohmann::json::array())) {
          const nlohmann::json& g = a.value("gap", nlohmann::json());
          if (!g.is_object() || !g.value("mean", nlohmann::json()).is_number()) continue;
          gaps.push_back({a.value("recipe", ""), g["mean"].get<double>(),
                          g.value("sd", nlohmann::json()).is_number() ? g["sd"].get<double>() : 0.0});
        }
      }
    }
  }
  s.tables.insert(s.tables.begin(), study_part.tables.begin(), study_part.tables.end());
  s.figures.insert(s.figures.begin(), study_part.figures.begin(), study_part.figures.end());
  return s;
}

}  // namespace nibble::report::detail
