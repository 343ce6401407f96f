#include "cli/bench.h"
#include "cli/compare.h"
#include "cli/embed.h"
#include "cli/logits.h"
#include "cli/quantize.h"
#include "cli/serve.h"
#include "cli/validate.h"
#include "server/log_sink.h"

#include <CLI/CLI.hpp>
#include <spdlog/cfg/env.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <iostream>

#include <unistd.h>

namespace {

// OpenMP's default spin-wait stalls every parallel region of a forward pass whenever the other core
// is busy (HTTP threads, other processes): measured 340 ms instead of 18 ms for a MiniLM decision
// on this 2-core machine. libgomp reads OMP_WAIT_POLICY once, as it loads, before main — so when
// the user has not chosen a policy, restart this process with the passive one.
void ensure_passive_openmp_wait(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") != nullptr) return;
  setenv("OMP_WAIT_POLICY", "passive", 1);
  execv("/proc/self/exe", argv);  // returns only on failure: carry on with the default policy
}

}  // namespace

int main(int argc, char** argv) {
  ensure_passive_openmp_wait(argv);
  s1::server::install_default_logger("s1serve");  // on stderr: stdout stays for command output
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug, for example
  CLI::App app{"s1serve: a serving engine for decision models (System One API)"};
  app.set_version_flag("--version", std::string("s1serve ") + S1SERVE_VERSION);
  app.require_subcommand(0, 1);
  s1::cli::add_serve_command(app);
  s1::cli::add_embed_command(app);
  s1::cli::add_logits_command(app);
  s1::cli::add_compare_command(app);
  s1::cli::add_bench_command(app);
  s1::cli::add_validate_command(app);
  s1::cli::add_quantize_command(app);
  CLI11_PARSE(app, argc, argv);
  if (app.get_subcommands().empty()) {
    std::cout << app.help() << std::endl;
  }
  return 0;
}
