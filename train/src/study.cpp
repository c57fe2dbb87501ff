#include "nibble/train/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include "nibble/io/json.h"
#include "nibble/limits.h"
#include "nibble/published.h"
#include "nibble/train/data.h"
#include "nibble/train/study_stats.h"
#include "nibble/train/sweep.h"

namespace nibble::train {
namespace fs = std::filesystem;
// Ordered: the sizes keep the file's order.
using json = nlohmann::ordered_json;

namespace {

// ---- Reading the file, key by key ----

class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw StudyError(fmt::format("{}: {}{}{}", where_, key, key.empty() ? "" : ": ", what));
  }

  // The members of object `v` at `key`, each name in `known`; every name in `required` present.
  void expect_object(const json& v, const std::string& key, const std::vector<std::string>& known,
                     const std::vector<std::string>& required) const {
    if (!v.is_object()) fail(key, "must be an object, got " + v.dump());
    for (auto it = v.begin(); it != v.end(); ++it) {
      if (std::find(known.begin(), known.end(), it.key()) == known.end()) {
        fail(join(key, it.key()), fmt::format("unknown key (known: {})", fmt::join(known, ", ")));
      }
    }
    for (const auto& r : required) {
      if (!v.contains(r)) fail(join(key, r), "is missing");
    }
  }

  static std::string join(const std::string& key, const std::string& sub) {
    return key.empty() ? sub : key + "." + sub;
  }

  int64_t integer(const json& v, const std::string& key, int64_t lo, int64_t hi) const {
    if (!v.is_number_integer()) fail(key, "must be an integer, got " + v.dump());
    const bool neg = v.is_number_unsigned() ? false : v.get<int64_t>() < 0;
    if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(key, "is too large");
    const int64_t x = neg ? v.get<int64_t>() : static_cast<int64_t>(v.get<uint64_t>());
    if (x < lo || x > hi) fail(key, fmt::format("must be in {}..{}, got {}", lo, hi, x));
    return x;
  }
  double number(const json& v, const std::string& key, double lo, double hi, bool open_lo = false) const {
    if (!v.is_number()) fail(key, "must be a number, got " + v.dump());
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < lo || x > hi || (open_lo && x == lo)) {
      fail(key, fmt::format("must be in {}{}, {}], got {}", open_lo ? "(" : "[", lo, hi, v.dump()));
    }
    return x;
  }
  std::string string(const json& v, const std::string& key) const {
    if (!v.is_string() || v.get<std::string>().empty()) fail(key, "must be a non-empty string, got " + v.dump());
    return v.get<std::string>();
  }
  const json& array(const json& v, const std::string& key) const {
    if (!v.is_array() || v.empty()) fail(key, "must be a non-empty array, got " + v.dump());
    return v;
  }
  std::vector<std::string> strings(const json& v, const std::string& key) const {
    std::vector<std::string> out;
    for (size_t i = 0; i < array(v, key).size(); ++i) {
      out.push_back(string(v[i], fmt::format("{}[{}]", key, i)));
      if (std::count(out.begin(), out.end(), out.back()) > 1) fail(key, fmt::format("names '{}' twice", out.back()));
    }
    return out;
  }
  std::vector<uint64_t> seeds(const json& v, const std::string& key) const {
    std::vector<uint64_t> out;
    for (size_t i = 0; i < array(v, key).size(); ++i) {
      out.push_back(static_cast<uint64_t>(integer(v[i], fmt::format("{}[{}]", key, i), 0, INT64_MAX)));
      if (std::count(out.begin(), out.end(), out.back()) > 1) fail(key, fmt::format("names seed {} twice", out.back()));
    }
    return out;
  }

 private:
  std::string where_;
};

// The file's JSON, refused where a key is given twice in any object (the parser would keep the last).
json parse_without_repeats(const std::string& text, const Reader& r) {
  using plain = nlohmann::json;
  std::vector<std::set<std::string>> open;
  const plain::parser_callback_t no_repeats = [&](int, plain::parse_event_t event, plain& parsed) {
    if (event == plain::parse_event_t::object_start) open.emplace_back();
    if (event == plain::parse_event_t::object_end && !open.empty()) open.pop_back();
    if (event == plain::parse_event_t::key && !open.empty()) {
      const std::string key = parsed.get<std::string>();
      if (!open.back().insert(key).second) r.fail(key, "is given twice");
    }
    return true;
  };
  try {
    io::parse_json(text, no_repeats);
    return io::parse_ordered_json(text);
  } catch (const io::JsonError& e) {
    r.fail("", std::string("not valid JSON: ") + e.what());
  }
}

void check_recipe(const Reader& r, const std::string& spec, const std::string& key) {
  try {
    parse_recipe_spec(spec);
  } catch (const RecipeError& e) {
    r.fail(key, e.what());
  }
}

}  // namespace

Study parse_study(const std::string& text, const std::string& where) {
  const Reader r(where);
  const json j = parse_without_repeats(text, r);
  r.expect_object(
      j, "",
      {"schema", "name", "description", "data", "notes", "sizes", "schedule", "lr_sweep", "arms", "ablations", "pairs",
       "seeds", "endpoint", "statistics"},
      {"schema", "name", "data", "sizes", "schedule", "lr_sweep", "arms", "pairs", "seeds", "endpoint", "statistics"});
  if (r.string(j["schema"], "schema") != "nibble-train-study/1") {
    r.fail("schema", "must be \"nibble-train-study/1\", got " + j["schema"].dump());
  }
  Study s;
  s.name = r.string(j["name"], "name");
  if (j.contains("description")) s.description = r.string(j["description"], "description");
  s.data = r.string(j["data"], "data");
  if (j.contains("notes")) s.notes = r.strings(j["notes"], "notes");

  const json& sched = j["schedule"];
  r.expect_object(sched, "schedule", {"optimizer", "lr_schedule", "min_lr_ratio", "weight_decay", "grad_clip"},
                  {"optimizer", "lr_schedule", "min_lr_ratio", "weight_decay", "grad_clip"});
  if (r.string(sched["optimizer"], "schedule.optimizer") != "adamw") {
    r.fail("schedule.optimizer", "must be \"adamw\" (the trainer's optimizer)");
  }
  s.lr_schedule = r.string(sched["lr_schedule"], "schedule.lr_schedule");
  try {
    parse_schedule(s.lr_schedule);
  } catch (const std::invalid_argument& e) {
    r.fail("schedule.lr_schedule", e.what());
  }
  // The decay ends at or below 10 % of the peak: the gap is measured after it.
  s.min_lr_ratio = r.number(sched["min_lr_ratio"], "schedule.min_lr_ratio", 0, 0.1);
  s.weight_decay = r.number(sched["weight_decay"], "schedule.weight_decay", 0, 1);
  s.grad_clip = r.number(sched["grad_clip"], "schedule.grad_clip", 0, 1e6, true);

  const json& sizes = j["sizes"];
  if (!sizes.is_object() || sizes.empty()) r.fail("sizes", "must be a non-empty object of sizes");
  for (auto it = sizes.begin(); it != sizes.end(); ++it) {
    const std::string k = "sizes." + it.key();
    const json& v = it.value();
    r.expect_object(v, k, {"layers", "d_model", "heads", "ctx", "batch", "steps", "warmup", "claims", "seeds", "seeds_reason"},
                    {"layers", "d_model", "heads", "ctx", "batch", "steps", "warmup", "claims"});
    StudySize z;
    z.name = it.key();
    z.model.layers = static_cast<int>(r.integer(v["layers"], k + ".layers", 1, 256));
    z.model.d_model = static_cast<int>(r.integer(v["d_model"], k + ".d_model", 32, 16384));
    z.model.heads = static_cast<int>(r.integer(v["heads"], k + ".heads", 1, 1024));
    z.model.ctx = static_cast<int>(r.integer(v["ctx"], k + ".ctx", 2, 65536));
    z.batch = static_cast<int>(r.integer(v["batch"], k + ".batch", 1, 1 << 20));
    z.steps = r.integer(v["steps"], k + ".steps", 1, int64_t{1} << 40);
    z.warmup = static_cast<int>(r.integer(v["warmup"], k + ".warmup", 1, 1 << 30));
    if (z.warmup >= z.steps) r.fail(k + ".warmup", "must be fewer than the steps");
    if (z.steps > (int64_t{1} << 62) / (static_cast<int64_t>(z.batch) * z.model.ctx)) {
      r.fail(k + ".steps", "steps x batch x ctx is more tokens than the study counts (2^62)");
    }
    const json& c = v["claims"];
    r.expect_object(c, k + ".claims", {"tokens_per_parameter", "tokens"}, {"tokens_per_parameter", "tokens"});
    z.claimed_tokens_per_parameter = r.number(c["tokens_per_parameter"], k + ".claims.tokens_per_parameter", 0, 1e9);
    z.claimed_tokens = r.integer(c["tokens"], k + ".claims.tokens", 0, INT64_MAX);
    if (z.tokens_per_parameter() < z.claimed_tokens_per_parameter) {
      r.fail(k + ".claims.tokens_per_parameter",
             fmt::format("claims at least {}, but {} tokens over {} quantized-linear parameters are {:.2f}",
                         z.claimed_tokens_per_parameter, z.tokens(), z.parameters(), z.tokens_per_parameter()));
    }
    if (z.tokens() < z.claimed_tokens) {
      r.fail(k + ".claims.tokens", fmt::format("claims at least {}, but {} steps x {} x {} are {}", z.claimed_tokens,
                                               z.steps, z.batch, z.model.ctx, z.tokens()));
    }
    s.sizes.push_back(z);
  }

  const json& lr = j["lr_sweep"];
  r.expect_object(lr, "lr_sweep", {"recipe", "lrs", "seeds"}, {"recipe", "lrs", "seeds"});
  for (size_t i = 0; i < r.array(lr["lrs"], "lr_sweep.lrs").size(); ++i) {
    s.lr_grid.push_back(r.number(lr["lrs"][i], fmt::format("lr_sweep.lrs[{}]", i), 0, 1, true));
    if (std::count(s.lr_grid.begin(), s.lr_grid.end(), s.lr_grid.back()) > 1) {
      r.fail("lr_sweep.lrs", fmt::format("names {} twice", s.lr_grid.back()));
    }
  }
  s.lr_seeds = r.seeds(lr["seeds"], "lr_sweep.seeds");

  s.arms = r.strings(j["arms"], "arms");
  for (size_t i = 0; i < s.arms.size(); ++i) check_recipe(r, s.arms[i], fmt::format("arms[{}]", i));
  if (s.arms.front() != "bf16") r.fail("arms", "must start with the baseline, bf16");
  if (r.string(lr["recipe"], "lr_sweep.recipe") != s.baseline()) {
    r.fail("lr_sweep.recipe", "must be the baseline arm, " + s.baseline());
  }
  if (j.contains("ablations")) {
    const json& ab = j["ablations"];
    for (size_t i = 0; i < r.array(ab, "ablations").size(); ++i) {
      const std::string k = fmt::format("ablations[{}]", i);
      r.expect_object(ab[i], k, {"recipe", "sizes"}, {"recipe", "sizes"});
      StudyAblation a;
      a.spec = r.string(ab[i]["recipe"], k + ".recipe");
      check_recipe(r, a.spec, k + ".recipe");
      if (std::find(s.arms.begin(), s.arms.end(), a.spec) != s.arms.end()) r.fail(k + ".recipe", "is an arm already");
      for (const auto& o : s.ablations) {
        if (o.spec == a.spec) r.fail(k + ".recipe", "is given twice");
      }
      a.sizes = r.strings(ab[i]["sizes"], k + ".sizes");
      for (const auto& z : a.sizes) {
        if (std::none_of(s.sizes.begin(), s.sizes.end(), [&](const StudySize& x) { return x.name == z; })) {
          r.fail(k + ".sizes", fmt::format("names '{}', which is not a size", z));
        }
      }
      s.ablations.push_back(a);
    }
  }
  const json& pairs = j["pairs"];
  for (size_t i = 0; i < r.array(pairs, "pairs").size(); ++i) {
    const std::string k = fmt::format("pairs[{}]", i);
    r.expect_object(pairs[i], k, {"a", "b", "question"}, {"a", "b", "question"});
    StudyPair p{r.string(pairs[i]["a"], k + ".a"), r.string(pairs[i]["b"], k + ".b"),
                r.string(pairs[i]["question"], k + ".question")};
    for (const std::string* arm : {&p.a, &p.b}) {
      const bool known =
          std::find(s.arms.begin(), s.arms.end(), *arm) != s.arms.end() ||
          std::any_of(s.ablations.begin(), s.ablations.end(), [&](const StudyAblation& a) { return a.spec == *arm; });
      if (!known || *arm == s.baseline()) r.fail(k, fmt::format("'{}' is not a quantized arm or ablation", *arm));
    }
    if (p.a == p.b) r.fail(k, "compares an arm with itself");
    s.pairs.push_back(p);
  }
  s.seeds = r.seeds(j["seeds"], "seeds");

  const json& end = j["endpoint"];
  r.expect_object(end, "endpoint", {"eval_bytes", "eval_every", "diag_every"},
                  {"eval_bytes", "eval_every", "diag_every"});
  // The endpoint is measured on at least a million held-out bytes.
  s.eval_bytes = r.integer(end["eval_bytes"], "endpoint.eval_bytes", 1000000, int64_t{1} << 40);
  s.eval_every = static_cast<int>(r.integer(end["eval_every"], "endpoint.eval_every", 0, 1 << 30));
  s.diag_every = static_cast<int>(r.integer(end["diag_every"], "endpoint.diag_every", 0, 1 << 30));

  const json& st = j["statistics"];
  r.expect_object(
      st, "statistics",
      {"ci_level", "bootstrap_resamples", "bootstrap_seed", "ci_target_points", "ci_target_gap_fraction", "min_seeds"},
      {"ci_level", "bootstrap_resamples", "bootstrap_seed", "ci_target_points", "ci_target_gap_fraction", "min_seeds"});
  s.ci_level = r.number(st["ci_level"], "statistics.ci_level", 0.5, 0.999);
  s.bootstrap_resamples =
      static_cast<int>(r.integer(st["bootstrap_resamples"], "statistics.bootstrap_resamples", 100, 1000000));
  s.bootstrap_seed = static_cast<uint64_t>(r.integer(st["bootstrap_seed"], "statistics.bootstrap_seed", 0, INT64_MAX));
  s.ci_target_points = r.number(st["ci_target_points"], "statistics.ci_target_points", 0, 100, true);
  s.ci_target_gap_fraction = r.number(st["ci_target_gap_fraction"], "statistics.ci_target_gap_fraction", 0, 10, true);
  s.min_seeds = static_cast<int>(r.integer(st["min_seeds"], "statistics.min_seeds", 2, 1000));
  if (static_cast<int>(s.seeds.size()) < s.min_seeds) {
    r.fail("seeds", fmt::format("lists {} seeds, fewer than statistics.min_seeds ({})", s.seeds.size(), s.min_seeds));
  }

  // A size runs the study's seeds, or fewer where its file says why: never silently.
  for (auto& z : s.sizes) {
    const std::string k = "sizes." + z.name;
    const json& v = sizes[z.name];
    z.seeds = s.seeds;
    if (v.contains("seeds")) {
      z.seeds = r.seeds(v["seeds"], k + ".seeds");
      for (uint64_t seed : z.seeds) {
        if (std::find(s.seeds.begin(), s.seeds.end(), seed) == s.seeds.end()) {
          r.fail(k + ".seeds", fmt::format("names seed {}, which is not one of the study's seeds", seed));
        }
      }
    }
    if (v.contains("seeds_reason")) z.seeds_reason = r.string(v["seeds_reason"], k + ".seeds_reason");
    const bool fewer = static_cast<int>(z.seeds.size()) < s.min_seeds;
    if (fewer && z.seeds_reason.empty()) {
      r.fail(k + ".seeds", fmt::format("lists {} seeds, fewer than statistics.min_seeds ({}), with no seeds_reason",
                                       z.seeds.size(), s.min_seeds));
    }
    if (!fewer && !z.seeds_reason.empty()) {
      r.fail(k + ".seeds_reason", fmt::format("is only for a size of fewer than statistics.min_seeds ({}) seeds",
                                              s.min_seeds));
    }
  }

  // Every run the study plans must be one the trainer accepts.
  for (const auto& z : s.sizes) {
    try {
      validate(study_config(s, z, s.lr_grid.front(), {}));
    } catch (const std::invalid_argument& e) {
      r.fail("sizes." + z.name, e.what());
    }
  }
  return s;
}

Study load_study(const std::string& path) {
  std::string text;
  try {
    text = io::read_text_file(path, limits::kMaxJsonBytes);
  } catch (const io::JsonError& e) {
    throw StudyError(e.what());
  }
  Study s = parse_study(text, path);
  s.path = path;
  return s;
}

const StudySize& find_size(const Study& s, const std::string& name) {
  for (const auto& z : s.sizes) {
    if (z.name == name) return z;
  }
  std::vector<std::string> names;
  for (const auto& z : s.sizes) names.push_back(z.name);
  throw StudyError(fmt::format("unknown size '{}' (the study has: {})", name, fmt::join(names, ", ")));
}

StudyPhase parse_phase(const std::string& name) {
  if (name == "lr") return StudyPhase::kLr;
  if (name == "main") return StudyPhase::kMain;
  throw StudyError(fmt::format("unknown phase '{}' (valid: lr, main)", name));
}

const char* phase_name(StudyPhase p) { return p == StudyPhase::kLr ? "lr" : "main"; }

std::vector<std::string> size_recipes(const Study& s, const StudySize& size) {
  std::vector<std::string> out = s.arms;
  for (const auto& a : s.ablations) {
    if (std::find(a.sizes.begin(), a.sizes.end(), size.name) != a.sizes.end()) out.push_back(a.spec);
  }
  return out;
}

TrainConfig study_config(const Study& s, const StudySize& size, double lr, const RunSeeds& seeds) {
  TrainConfig c;
  c.model = size.model;
  c.batch = size.batch;
  c.steps = size.steps;
  c.warmup = size.warmup;
  c.lr = lr;
  c.schedule = parse_schedule(s.lr_schedule);
  c.min_lr_ratio = s.min_lr_ratio;
  c.weight_decay = s.weight_decay;
  c.grad_clip = s.grad_clip;
  c.eval_every = s.eval_every;
  c.eval_bytes = s.eval_bytes;
  c.diag_every = s.diag_every;
  c.seeds = seeds;
  c.data_dir = s.data;
  return c;
}

namespace {

std::string lr_tag(double lr) { return fmt::format("lr{}", lr); }

StudyRun make_run(const Study& s, const StudySize& size, StudyPhase phase, const std::string& spec, double lr,
                  uint64_t seed) {
  StudyRun r;
  r.size = size.name;
  r.phase = phase;
  r.spec = spec;
  r.recipe = parse_recipe_spec(spec);
  r.seeds = resolve_seeds(seed, {}, {}, {});
  r.lr = lr;
  r.config = study_config(s, size, lr, r.seeds);
  r.dir = phase == StudyPhase::kLr
              ? fmt::format("{}/lr/{}-{}-{}", size.name, r.recipe.name, lr_tag(lr), seeds_tag(r.seeds))
              : fmt::format("{}/main/{}-{}", size.name, r.recipe.name, seeds_tag(r.seeds));
  return r;
}

template <typename T>
std::vector<T> subset(const std::vector<T>& all, const std::vector<T>& want, const char* what,
                      const std::string& whose = "the study") {
  if (want.empty()) return all;
  for (const auto& w : want) {
    if (std::find(all.begin(), all.end(), w) == all.end()) {
      throw StudyError(fmt::format("{} '{}' is not in {} (it has: {})", what, w, whose, fmt::join(all, ", ")));
    }
  }
  return want;
}

}  // namespace

std::vector<StudyRun> plan_lr_phase(const Study& s, const StudySize& size, const std::vector<uint64_t>& seeds) {
  std::vector<StudyRun> out;
  for (uint64_t seed : subset(s.lr_seeds, seeds, "LR-sweep seed")) {
    for (double lr : s.lr_grid) out.push_back(make_run(s, size, StudyPhase::kLr, s.baseline(), lr, seed));
  }
  return out;
}

std::vector<StudyRun> plan_main_phase(const Study& s, const StudySize& size, double lr,
                                      const std::vector<std::string>& recipes, const std::vector<uint64_t>& seeds) {
  const std::vector<std::string> specs = subset(size_recipes(s, size), recipes, "recipe");
  const std::vector<uint64_t> seed_list = subset(size.seeds, seeds, "seed", "size " + size.name);
  // Seed-major: an interrupted phase leaves whole pairs, not whole recipes.
  std::vector<StudyRun> out;
  for (uint64_t seed : seed_list) {
    for (const auto& spec : specs) out.push_back(make_run(s, size, StudyPhase::kMain, spec, lr, seed));
  }
  return out;
}

const char* state_name(StudyRunState s) {
  switch (s) {
    case StudyRunState::kAbsent: return "not started";
    case StudyRunState::kStarted: return "started, not finished";
    case StudyRunState::kFinished: return "finished";
    case StudyRunState::kDiverged: return "diverged";
  }
  return "?";
}

StudyRunStatus study_run_status(const fs::path& runs_dir, const StudyRun& run) {
  StudyRunStatus st;
  const fs::path dir = runs_dir / run.dir;
  if (!fs::is_directory(dir)) return st;
  st.state = StudyRunState::kStarted;
  const fs::path rj = dir / "run.json";
  if (fs::exists(rj)) {
    nlohmann::json j;
    try {
      j = io::read_json_file(rj.string());
    } catch (const io::JsonError& e) {
      throw StudyError(e.what());
    }
    if (j.is_object() && j.value("status", "") == "finished") {
      const nlohmann::json data = j.contains("config") && j["config"].is_object()
                                      ? j["config"].value("data", nlohmann::json())
                                      : nlohmann::json();
      if (!data.is_string()) {
        throw StudyError(fmt::format("{}: records no data fingerprint in config.data", rj.string()));
      }
      try {
        run_state(dir, experiment_config(run.recipe, run.config, data.get<std::string>()));
        st.data = data.get<std::string>();
        // A validation loss that is not finite (JSON writes it as null): the run diverged at its last evaluation.
        const nlohmann::json& v = j.at("final_val_loss");
        if (!v.is_number() || !std::isfinite(v.get<double>())) {
          st.state = StudyRunState::kDiverged;
          st.diverged_at = run.config.steps;
          return st;
        }
        st.final_val_loss = v.get<double>();
        const nlohmann::json vb = j.value("final_val_loss_bf16_forward", nlohmann::json(st.final_val_loss));
        st.final_val_loss_bf16 = vb.is_number() ? vb.get<double>() : std::numeric_limits<double>::quiet_NaN();
      } catch (const SweepError& e) {
        throw StudyError(e.what());
      } catch (const nlohmann::json::exception& e) {
        throw StudyError(fmt::format("{}: {}", rj.string(), e.what()));
      }
      st.state = StudyRunState::kFinished;
      return st;
    }
  }
  const fs::path log = dir / "train.log";
  if (fs::exists(log)) {
    std::string text;
    try {
      text = io::read_text_file(log.string(), limits::kMaxJsonBytes);
    } catch (const io::JsonError& e) {
      throw StudyError(e.what());
    }
    if (const auto step = diverged_step(text)) {
      st.state = StudyRunState::kDiverged;
      st.diverged_at = *step;
    }
  }
  return st;
}

namespace {

struct LrPoint {
  double lr = 0;
  std::vector<double> val;  // finished runs' final validation losses
  int diverged = 0;
  std::vector<std::string> missing;
};

std::vector<LrPoint> lr_points(const Study& s, const StudySize& size, const fs::path& runs_dir) {
  std::vector<LrPoint> out;
  for (double lr : s.lr_grid) out.push_back({lr, {}, 0, {}});
  for (const auto& run : plan_lr_phase(s, size)) {
    LrPoint& p = *std::find_if(out.begin(), out.end(), [&](const LrPoint& x) { return x.lr == run.lr; });
    const StudyRunStatus st = study_run_status(runs_dir, run);
    if (st.state == StudyRunState::kFinished) {
      p.val.push_back(st.final_val_loss);
    } else if (st.state == StudyRunState::kDiverged) {
      ++p.diverged;
    } else {
      p.missing.push_back(fmt::format("{} ({})", run.dir, state_name(st.state)));
    }
  }
  return out;
}

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(v.size());
}

// The index of the best LR, or -1 while the sweep is incomplete or nothing finished finite.
int best_lr(const std::vector<LrPoint>& points) {
  int best = -1;
  for (size_t i = 0; i < points.size(); ++i) {
    if (!points[i].missing.empty()) return -1;
    // A diverged seed disqualifies its LR: the mean over the rest would flatter it.
    if (points[i].diverged > 0 || points[i].val.empty()) continue;
    const double m = mean_of(points[i].val);
    if (!std::isfinite(m)) continue;
    if (best < 0 || m < mean_of(points[static_cast<size_t>(best)].val)) best = static_cast<int>(i);
  }
  return best;
}

}  // namespace

double chosen_lr(const Study& s, const StudySize& size, const fs::path& runs_dir) {
  const auto points = lr_points(s, size, runs_dir);
  std::vector<std::string> missing;
  for (const auto& p : points) missing.insert(missing.end(), p.missing.begin(), p.missing.end());
  if (!missing.empty()) {
    throw StudyError(
        fmt::format("size {}: the learning-rate sweep is incomplete under {} ({} of {} runs missing: {}); "
                    "run `nibble train-study run --size {} --phase lr` first",
                    size.name, runs_dir.string(), missing.size(), s.lr_grid.size() * s.lr_seeds.size(),
                    fmt::join(missing, ", "), size.name));
  }
  const int best = best_lr(points);
  if (best < 0) throw StudyError(fmt::format("size {}: every run of the learning-rate sweep diverged", size.name));
  return points[static_cast<size_t>(best)].lr;
}

std::string plan_text(const Study& s, const fs::path& runs_dir) {
  std::string out =
      fmt::format("study {} ({}): {} sizes; runs under {}\n", s.name, s.path, s.sizes.size(), runs_dir.string());
  size_t total = 0, finished = 0;
  for (const auto& size : s.sizes) {
    out += fmt::format(
        "\n{}: {} layers, d_model {}, {} heads, ctx {}, batch {} ({} tokens/step), {} steps, warm-up {}; "
        "{} quantized-linear parameters ({} in all); {} tokens, {:.2f} tokens/parameter\n",
        size.name, size.model.layers, size.model.d_model, size.model.heads, size.model.ctx, size.batch,
        size.batch * size.model.ctx, size.steps, size.warmup, size.parameters(), model_parameters(size.model),
        size.tokens(), size.tokens_per_parameter());
    std::optional<double> lr;
    std::string lr_note;
    try {
      lr = chosen_lr(s, size, runs_dir);
      lr_note = fmt::format("lr {} (chosen by the LR sweep)", *lr);
    } catch (const StudyError&) {
      lr_note = "lr chosen once the LR sweep is complete";
    }
    auto list = [&](const char* title, const std::vector<StudyRun>& runs) {
      out += fmt::format("  phase {}: {} runs\n", title, runs.size());
      for (const auto& r : runs) {
        const StudyRunStatus st = study_run_status(runs_dir, r);
        ++total;
        finished += st.state == StudyRunState::kFinished || st.state == StudyRunState::kDiverged;
        out += fmt::format("    {:<44} lr {:<8} {:>12} tokens {:>7.2f} tok/param  {}\n", r.dir,
                           r.phase == StudyPhase::kLr || lr ? fmt::format("{}", r.lr) : "-", size.tokens(),
                           size.tokens_per_parameter(),
                           st.state == StudyRunState::kDiverged ? fmt::format("diverged at step {}", st.diverged_at)
                                                                : state_name(st.state));
      }
    };
    if (size.seeds_reduced()) {
      out += fmt::format("  seeds {}: fewer than the study's {}, because {}\n", fmt::join(size.seeds, ", "),
                         s.min_seeds, size.seeds_reason);
    }
    list("lr (bf16, every grid LR)", plan_lr_phase(s, size));
    list(("main, " + lr_note).c_str(), plan_main_phase(s, size, lr.value_or(s.lr_grid.front())));
  }
  out +=
      fmt::format("\n{} runs planned, {} done (finished or diverged), {} to run\n", total, finished, total - finished);
  return out;
}

// ---- The summary ----

namespace {

using ojson = nlohmann::ordered_json;

ojson number_or_null(double x) { return std::isfinite(x) ? ojson(x) : ojson(nullptr); }

ojson interval_json(const MeanInterval& m) {
  return {{"n", m.n},
          {"mean", number_or_null(m.mean)},
          {"sd", number_or_null(m.sd)},
          {"ci_half_width", number_or_null(m.half_width)},
          {"ci_lo", number_or_null(m.lo)},
          {"ci_hi", number_or_null(m.hi)}};
}

// The last diagnostic step's `recipe` attenuation per GEMM, in depth order: (alpha, cum_alpha) per linear.
struct DepthProfile {
  std::map<std::string, std::vector<double>> alpha, cum_alpha;
  int64_t step = -1;
};

// diag_csv, or its gzip-compressed copy diag_csv + ".gz" (how the recorded
// runs under docs/results keep their per-step files); neither: no profile.
DepthProfile read_depth_profile(const fs::path& diag_csv) {
  DepthProfile p;
  fs::path file = diag_csv;
  if (!fs::exists(file)) file += ".gz";
  if (!fs::exists(file)) return p;
  std::istringstream in(read_text_file(file));
  std::string line;
  std::getline(in, line);
  if (line != "step,layer,linear,gemm,variant,alpha,cum_alpha") return p;
  struct Row {
    int64_t step;
    std::string gemm;
    double alpha, cum;
  };
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::vector<std::string> c;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) c.push_back(cell);
    if (c.size() != 7 || c[4] != "recipe") continue;
    try {
      rows.push_back({std::stoll(c[0]), c[3], std::stod(c[5]), std::stod(c[6])});
    } catch (const std::exception&) {
      continue;
    }
    p.step = std::max(p.step, rows.back().step);
  }
  for (const auto& r : rows) {
    if (r.step != p.step) continue;
    p.alpha[r.gemm].push_back(r.alpha);
    p.cum_alpha[r.gemm].push_back(r.cum);
  }
  return p;
}

}  // namespace

nlohmann::ordered_json summarize_study(const Study& s, const fs::path& runs_dir) {
  ojson out;
  out["schema"] = "nibble-train-study-summary/1";
  out["study"] = s.name;
  out["study_file"] = s.path;
  out["runs_dir"] = runs_dir.string();
  out["metric"] = {
      {"gap", "g = (L_recipe - L_bf16) / L_bf16, final validation loss, paired by seed"},
      {"difference", "d = g_a - g_b per seed (paired)"},
      {"ci_level", s.ci_level},
      {"bootstrap", {{"resamples", s.bootstrap_resamples}, {"seed", s.bootstrap_seed}, {"method", "percentile"}}},
      {"ci_target", fmt::format("half-width <= max({} pp, {} x |mean e2m1 gap|), at least {} seeds", s.ci_target_points,
                                s.ci_target_gap_fraction, s.min_seeds)},
      {"verdict",
       "a better / b better where the t interval of d excludes 0; else no difference larger than "
       "max(|ci_lo|, |ci_hi|)"}};
  ojson paper = ojson::array();
  for (const auto& e : published::kUfp4Training) {
    paper.push_back({{"model", e.model}, {"relative_change", e.relative_change}});
  }
  out["paper"] = {
      {"source", published::kUfp4},
      {"effect", published::kUfp4TrainingEffect},
      {"meaning", "d_paper = effect x mean e2m1 gap: the smallest reduction of E2M1's gap the paper reports"},
      {"results", paper}};

  int total_runs = 0, total_finished = 0, total_diverged = 0, total_started = 0, total_outside = 0;
  ojson sizes = ojson::array();
  for (const auto& size : s.sizes) {
    ojson z;
    z["name"] = size.name;
    z["model"] = {{"layers", size.model.layers},
                  {"d_model", size.model.d_model},
                  {"heads", size.model.heads},
                  {"ctx", size.model.ctx},
                  {"mlp_mult", size.model.mlp_mult}};
    z["batch"] = size.batch;
    z["steps"] = size.steps;
    z["warmup"] = size.warmup;
    z["tokens"] = size.tokens();
    z["quantized_linear_parameters"] = size.parameters();
    z["parameters"] = model_parameters(size.model);
    z["tokens_per_parameter"] = size.tokens_per_parameter();
    z["seeds"] = {{"main", size.seeds},
                  {"study_min", s.min_seeds},
                  {"reduced_reason", size.seeds_reduced() ? ojson(size.seeds_reason) : ojson(nullptr)}};
    std::set<std::string> data_ids;

    // The learning-rate sweep.
    const auto points = lr_points(s, size, runs_dir);
    ojson lrs = ojson::array();
    bool lr_complete = true;
    for (const auto& p : points) {
      lr_complete = lr_complete && p.missing.empty();
      lrs.push_back({{"lr", p.lr},
                     {"finished", p.val.size()},
                     {"diverged", p.diverged},
                     {"missing", p.missing.size()},
                     {"mean_final_val_loss", number_or_null(mean_of(p.val))}});
    }
    const int best = best_lr(points);
    z["lr_sweep"] = {{"complete", lr_complete && best >= 0},
                     {"runs", lrs},
                     {"chosen_lr", best >= 0 ? ojson(points[static_cast<size_t>(best)].lr) : ojson(nullptr)}};
    for (const auto& run : plan_lr_phase(s, size)) {
      const auto st = study_run_status(runs_dir, run);
      ++total_runs;
      total_started += st.state != StudyRunState::kAbsent;
      total_finished += st.state == StudyRunState::kFinished;
      total_diverged += st.state == StudyRunState::kDiverged;
      if (st.state == StudyRunState::kFinished) data_ids.insert(st.data);
    }

    // The main phase.
    const std::vector<std::string> recipes = size_recipes(s, size);
    ojson runs = ojson::array();
    // recipe -> seed -> status
    std::map<std::string, std::map<uint64_t, StudyRunStatus>> status;
    std::map<std::string, std::map<uint64_t, DepthProfile>> depth;
    int planned = 0, done = 0;
    ojson outside = ojson::array();
    // A started run as the summary lists it, in the plan or outside it.
    auto run_entry = [](const StudyRun& run, const StudyRunStatus& st) {
      ojson r = {{"dir", run.dir}, {"recipe", run.spec}, {"seed", run.seeds.init}, {"state", state_name(st.state)}};
      if (st.state == StudyRunState::kDiverged) r["diverged_at_step"] = st.diverged_at;
      if (st.state == StudyRunState::kFinished) {
        r["final_val_loss"] = st.final_val_loss;
        r["final_val_loss_bf16_forward"] = st.final_val_loss_bf16;
      }
      return r;
    };
    if (best >= 0) {
      const double lr = points[static_cast<size_t>(best)].lr;
      for (const auto& run : plan_main_phase(s, size, lr)) {
        const auto st = study_run_status(runs_dir, run);
        ++planned;
        ++total_runs;
        total_started += st.state != StudyRunState::kAbsent;
        total_finished += st.state == StudyRunState::kFinished;
        total_diverged += st.state == StudyRunState::kDiverged;
        done += st.state == StudyRunState::kFinished || st.state == StudyRunState::kDiverged;
        status[run.spec][run.seeds.init] = st;
        if (st.state == StudyRunState::kFinished) {
          data_ids.insert(st.data);
          depth[run.spec][run.seeds.init] = read_depth_profile(runs_dir / run.dir / "diag.csv");
        }
        if (st.state != StudyRunState::kAbsent) runs.push_back(run_entry(run, st));
      }
      // Runs of the study's other seeds where the size runs fewer: reported, never counted.
      for (uint64_t seed : s.seeds) {
        if (std::find(size.seeds.begin(), size.seeds.end(), seed) != size.seeds.end()) continue;
        for (const auto& spec : recipes) {
          const StudyRun run = make_run(s, size, StudyPhase::kMain, spec, lr, seed);
          const auto st = study_run_status(runs_dir, run);
          if (st.state == StudyRunState::kAbsent) continue;
          outside.push_back(run_entry(run, st));
          ++total_outside;
        }
      }
    } else {
      planned = static_cast<int>(recipes.size() * size.seeds.size());
      total_runs += planned;
    }
    if (data_ids.size() > 1) {
      throw StudyError(fmt::format("size {}: its finished runs trained on different data ({})", size.name,
                                   fmt::join(data_ids, " | ")));
    }
    z["data"] = data_ids.empty() ? ojson(nullptr) : ojson(*data_ids.begin());
    z["main"] = {{"lr", best >= 0 ? ojson(points[static_cast<size_t>(best)].lr) : ojson(nullptr)},
                 {"planned", planned},
                 {"done", done},
                 {"complete", best >= 0 && done == planned},
                 {"runs", runs},
                 {"outside_plan", outside}};

    // Per seed, each arm's gap to bf16 of the same seed (both finished).
    const auto& base = status[s.baseline()];
    auto gaps_of = [&](const std::string& spec, bool bf16_forward) {
      std::map<uint64_t, double> g;
      for (const auto& [seed, st] : status[spec]) {
        const auto b = base.find(seed);
        if (st.state != StudyRunState::kFinished || b == base.end() || b->second.state != StudyRunState::kFinished) {
          continue;
        }
        const double lb = b->second.final_val_loss;
        const double l = bf16_forward ? st.final_val_loss_bf16 : st.final_val_loss;
        if (std::isfinite(l) && lb > 0) g[seed] = (l - lb) / lb;
      }
      return g;
    };
    auto values = [](const std::map<uint64_t, double>& m) {
      std::vector<double> v;
      for (const auto& [seed, x] : m) v.push_back(x);
      return v;
    };
    ojson arms = ojson::array();
    std::map<std::string, double> mean_gap;
    std::vector<double> all_gaps, all_fprop_cum;
    for (const auto& spec : recipes) {
      ojson a = {{"recipe", spec}, {"description", describe(parse_recipe_spec(spec))}};
      int fin = 0, div = 0, started = 0;
      std::vector<double> val;
      for (const auto& [seed, st] : status[spec]) {
        started += st.state != StudyRunState::kAbsent;
        fin += st.state == StudyRunState::kFinished;
        div += st.state == StudyRunState::kDiverged;
        if (st.state == StudyRunState::kFinished) val.push_back(st.final_val_loss);
      }
      a["runs"] = {{"planned", size.seeds.size()}, {"started", started}, {"finished", fin}, {"diverged", div}};
      a["final_val_loss"] = interval_json(t_interval(val, s.ci_level));
      if (spec != s.baseline()) {
        const auto g = gaps_of(spec, false);
        ojson per_seed = ojson::object();
        for (const auto& [seed, x] : g) per_seed[std::to_string(seed)] = x;
        const MeanInterval gi = t_interval(values(g), s.ci_level);
        mean_gap[spec] = gi.mean;
        a["gap"] = interval_json(gi);
        a["gap"]["per_seed"] = per_seed;
        a["gap_bf16_forward"] = interval_json(t_interval(values(gaps_of(spec, true)), s.ci_level));
        // Attenuation across depth at the last diagnostic step, mean over seeds.
        ojson att = ojson::object();
        for (const char* gemm : {"fprop", "dgrad", "wgrad"}) {
          std::vector<double> cum_last;
          std::vector<double> mean_alpha;
          std::vector<double> by_depth;  // sum over seeds of cum_alpha per linear, depth order
          for (const auto& [seed, prof] : depth[spec]) {
            const auto it = prof.cum_alpha.find(gemm);
            if (it == prof.cum_alpha.end() || it->second.empty()) continue;
            cum_last.push_back(it->second.back());
            mean_alpha.push_back(mean_of(prof.alpha.at(gemm)));
            by_depth.resize(std::max(by_depth.size(), it->second.size()), 0.0);
            for (size_t i = 0; i < it->second.size(); ++i) by_depth[i] += it->second[i];
            if (std::string(gemm) == "fprop" && g.count(seed) != 0) {
              all_gaps.push_back(g.at(seed));
              all_fprop_cum.push_back(it->second.back());
            }
          }
          if (!cum_last.empty()) {
            for (double& x : by_depth) x /= static_cast<double>(cum_last.size());
            att[gemm] = {{"cum_alpha_last_layer", mean_of(cum_last)},
                         {"mean_alpha_per_layer", mean_of(mean_alpha)},
                         {"cum_alpha_by_depth", by_depth},
                         {"runs", cum_last.size()}};
          }
        }
        a["attenuation"] = att;
      }
      arms.push_back(a);
    }
    z["arms"] = arms;
    z["attenuation_vs_gap"] = {
        {"what", "Pearson r over the quantized runs between the Fprop cumulative attenuation at the last layer and g"},
        {"r", number_or_null(pearson(all_fprop_cum, all_gaps))},
        {"runs", all_gaps.size()}};

    // The paired differences.
    const double e2m1_gap = mean_gap.count("e2m1") != 0 ? mean_gap["e2m1"] : std::numeric_limits<double>::quiet_NaN();
    // A size reduced below the study's minimum is held to its own seed count.
    const int seeds_floor = std::min(s.min_seeds, static_cast<int>(size.seeds.size()));
    const double target = std::max(s.ci_target_points / 100,
                                   std::isfinite(e2m1_gap) ? s.ci_target_gap_fraction * std::fabs(e2m1_gap) : 0.0);
    ojson pairs = ojson::array();
    for (size_t i = 0; i < s.pairs.size(); ++i) {
      const StudyPair& p = s.pairs[i];
      if (std::find(recipes.begin(), recipes.end(), p.a) == recipes.end() ||
          std::find(recipes.begin(), recipes.end(), p.b) == recipes.end()) {
        continue;
      }
      const auto ga = gaps_of(p.a, false);
      const auto gb = gaps_of(p.b, false);
      std::vector<double> d;
      ojson per_seed = ojson::object();
      for (const auto& [seed, x] : ga) {
        if (gb.count(seed) == 0) continue;
        d.push_back(x - gb.at(seed));
        per_seed[std::to_string(seed)] = d.back();
      }
      const MeanInterval di = t_interval(d, s.ci_level);
      ojson pj = {{"a", p.a}, {"b", p.b}, {"question", p.question}, {"primary", i == 0}};
      pj["d"] = interval_json(di);
      pj["d"]["per_seed"] = per_seed;
      if (d.size() >= 2) {
        const BootstrapInterval bi = bootstrap_interval(d, s.ci_level, s.bootstrap_resamples, s.bootstrap_seed);
        pj["bootstrap"] = {{"ci_lo", bi.lo}, {"ci_hi", bi.hi}, {"resamples", bi.resamples}, {"seed", bi.seed}};
        const TTest t = paired_t_test(d);
        pj["t_test"] = {{"t", number_or_null(t.t)}, {"df", t.df}, {"p", t.p}};
        if (std::isfinite(di.sd)) {
          pj["seeds_needed"] = seeds_needed(di.sd, target, s.ci_level, seeds_floor);
        }
      }
      pj["ci_target_half_width"] = target;
      pj["ci_target_met"] =
          std::isfinite(di.half_width) && di.half_width <= target && static_cast<int>(d.size()) >= seeds_floor;
      pj["verdict"] = verdict(di, p.a, p.b);
      if (p.a == "ufp4" && p.b == "e2m1" && std::isfinite(e2m1_gap)) {
        const double dp = published::kUfp4TrainingEffect * e2m1_gap;
        pj["paper_d"] = dp;
        // One seed has no interval: the paper's figure is neither in nor outside it.
        if (std::isfinite(di.lo) && std::isfinite(di.hi)) pj["paper_within_ci"] = di.lo <= dp && dp <= di.hi;
      }
      pairs.push_back(pj);
    }
    z["pairs"] = pairs;
    z["complete"] = best >= 0 && done == planned;
    sizes.push_back(z);
  }
  out["sizes"] = sizes;
  out["runs"] = {
      {"planned", total_runs}, {"started", total_started}, {"finished", total_finished}, {"diverged", total_diverged},
      {"outside_plan", total_outside}};
  return out;
}

namespace {

std::string pp(const ojson& v) { return v.is_number() ? fmt::format("{:+.3f}", 100 * v.get<double>()) : "-"; }

std::string ci_cell(const ojson& m) {
  if (!m.contains("mean") || !m["mean"].is_number()) return "-";
  if (!m["ci_half_width"].is_number()) return pp(m["mean"]) + " (n = 1)";
  return fmt::format("{} ± {:.3f} [{}, {}]", pp(m["mean"]), 100 * m["ci_half_width"].get<double>(), pp(m["ci_lo"]),
                     pp(m["ci_hi"]));
}

}  // namespace

std::string study_markdown(const nlohmann::ordered_json& s) {
  std::string md = fmt::format("# Study {}\n\n", s["study"].get<std::string>());
  const auto& r = s["runs"];
  md += fmt::format(
      "Runs: {} planned, {} started, {} finished, {} diverged. Gaps g and differences d in percentage "
      "points; mean ± {:.0f} % Student-t CI half-width [CI]; bootstrap: {} percentile resamples, seed {}.\n",
      r["planned"].get<int>(), r["started"].get<int>(), r["finished"].get<int>(), r["diverged"].get<int>(),
      100 * s["metric"]["ci_level"].get<double>(), s["metric"]["bootstrap"]["resamples"].get<int>(),
      s["metric"]["bootstrap"]["seed"].get<uint64_t>());
  if (r.value("outside_plan", 0) > 0) {
    md += fmt::format("Besides them, {} run(s) of seeds outside a reduced size's plan, listed under the size.\n",
                      r["outside_plan"].get<int>());
  }
  md += fmt::format("Paper ({}): UFP4's gap {:.0f} % below E2M1's at the least.\n",
                    s["paper"]["source"].get<std::string>(), -100 * s["paper"]["effect"].get<double>());
  for (const auto& z : s["sizes"]) {
    md += fmt::format("\n## {} — {} layers × d {}, {} quantized-linear parameters, {} tokens ({:.1f}/parameter)\n\n",
                      z["name"].get<std::string>(), z["model"]["layers"].get<int>(), z["model"]["d_model"].get<int>(),
                      z["quantized_linear_parameters"].get<int64_t>(), z["tokens"].get<int64_t>(),
                      z["tokens_per_parameter"].get<double>());
    const auto& lr = z["lr_sweep"];
    md += "LR sweep (bf16): ";
    for (const auto& p : lr["runs"]) {
      md += fmt::format("{} → {}{}; ", p["lr"].get<double>(),
                        p["mean_final_val_loss"].is_number()
                            ? fmt::format("{:.4f}", p["mean_final_val_loss"].get<double>())
                            : std::string("-"),
                        p["diverged"].get<int>() > 0 ? " (diverged)" : "");
    }
    md += lr["chosen_lr"].is_number() ? fmt::format("chosen {}.\n", lr["chosen_lr"].get<double>())
                                      : std::string("incomplete.\n");
    md += fmt::format("Main phase: {} of {} runs done{}.\n", z["main"]["done"].get<int>(),
                      z["main"]["planned"].get<int>(), z["complete"].get<bool>() ? "" : " (incomplete)");
    if (z["seeds"]["reduced_reason"].is_string()) {
      md += fmt::format("Seeds {}: fewer than the study's {}, because {}\n",
                        fmt::join(z["seeds"]["main"].get<std::vector<uint64_t>>(), ", "),
                        z["seeds"]["study_min"].get<int>(), z["seeds"]["reduced_reason"].get<std::string>());
    }
    md += "\n";
    md +=
        "| recipe | runs (finished / diverged) | final val loss | g (pp) | g, BF16 forward (pp) | cum. α Fprop / Dgrad "
        "/ Wgrad |\n";
    md += "|---|---|---|---|---|---|\n";
    for (const auto& a : z["arms"]) {
      std::string att = "-";
      if (a.contains("attenuation") && !a["attenuation"].empty()) {
        att.clear();
        for (const char* g : {"fprop", "dgrad", "wgrad"}) {
          att += (att.empty() ? "" : " / ") +
                 (a["attenuation"].contains(g)
                      ? fmt::format("{:.3f}", a["attenuation"][g]["cum_alpha_last_layer"].get<double>())
                      : std::string("-"));
        }
      }
      const auto& fv = a["final_val_loss"];
      md += fmt::format("| {} | {} / {} | {} | {} | {} | {} |\n", a["recipe"].get<std::string>(),
                        a["runs"]["finished"].get<int>(), a["runs"]["diverged"].get<int>(),
                        fv["mean"].is_number() ? fmt::format("{:.4f}", fv["mean"].get<double>()) : std::string("-"),
                        a.contains("gap") ? ci_cell(a["gap"]) : "0",
                        a.contains("gap") ? ci_cell(a["gap_bf16_forward"]) : "0", att);
    }
    if (!z["pairs"].empty()) {
      md +=
          "\n| d = g_a − g_b | seeds | d (pp), t CI | bootstrap CI | p (paired t) | verdict | paper | seeds for the CI "
          "target |\n";
      md += "|---|---|---|---|---|---|---|---|\n";
      for (const auto& p : z["pairs"]) {
        md += fmt::format(
            "| {} − {} | {} | {} | {} | {} | {} | {} | {} |\n", p["a"].get<std::string>(), p["b"].get<std::string>(),
            p["d"]["n"].get<size_t>(), ci_cell(p["d"]),
            p.contains("bootstrap") ? fmt::format("[{}, {}]", pp(p["bootstrap"]["ci_lo"]), pp(p["bootstrap"]["ci_hi"]))
                                    : std::string("-"),
            p.contains("t_test") ? fmt::format("{:.3g}", p["t_test"]["p"].get<double>()) : std::string("-"),
            p["verdict"].get<std::string>(),
            p.contains("paper_d")
                ? fmt::format("{}{}", pp(p["paper_d"]),
                              !p.contains("paper_within_ci")      ? ""
                              : p["paper_within_ci"].get<bool>() ? " (in CI)"
                                                                 : " (outside CI)")
                : std::string("-"),
            p.contains("seeds_needed") ? fmt::format("{}", p["seeds_needed"].get<int>()) : std::string("-"));
      }
    }
    const auto& av = z["attenuation_vs_gap"];
    if (av["r"].is_number()) {
      md += fmt::format(
          "\nAttenuation vs gap: Pearson r = {:.2f} over {} quantized runs (Fprop cumulative α at the "
          "last layer against g).\n",
          av["r"].get<double>(), av["runs"].get<size_t>());
    }
    if (!z["main"]["outside_plan"].empty()) {
      md += "\nRuns of seeds outside the size's plan (reported, not in the statistics):\n\n";
      for (const auto& run : z["main"]["outside_plan"]) {
        md += fmt::format("- `{}`: {}{}\n", run["dir"].get<std::string>(), run["state"].get<std::string>(),
                          run.contains("final_val_loss")
                              ? fmt::format(", final validation loss {:.4f}", run["final_val_loss"].get<double>())
                              : std::string());
      }
    }
    bool any_started = false;
    for (const auto& run : z["main"]["runs"]) any_started |= run["state"] != "finished";
    if (any_started) {
      md += "\nRuns not finished:\n\n";
      for (const auto& run : z["main"]["runs"]) {
        if (run["state"] == "finished") continue;
        md += fmt::format("- `{}`: {}{}\n", run["dir"].get<std::string>(), run["state"].get<std::string>(),
                          run.contains("diverged_at_step")
                              ? fmt::format(" at step {}", run["diverged_at_step"].get<int64_t>())
                              : std::string());
      }
    }
  }
  return md;
}

}  // namespace nibble::train
