#include "cli/compare.h"

#include "cli/compare_diff.h"
#include "cli/http_client.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>

namespace s1::cli {

namespace {

// Prefixes the body's members with "model" when one is named; every case body starts with '{'.
std::string with_model(const std::optional<std::string>& model, std::string_view body) {
  if (!model) return std::string(body);
  return "{\"model\":" + nlohmann::json(*model).dump() + "," + std::string(body.substr(1));
}

}  // namespace

std::vector<CompareCase> compare_cases(const std::optional<std::string>& model) {
  const auto post = [&](std::string name, std::string_view body, int status = 200) {
    return CompareCase{std::move(name), "POST", "/v1/systemone", with_model(model, body), status, true};
  };
  std::vector<CompareCase> cases;
  cases.push_back(CompareCase{"health", "GET", "/health", "", 200, false});
  cases.push_back(post("noul alone",
                       R"({"state":"I was charged twice for my subscription this month.","questions":{"duplicate_charge":{"type":"noul","instructions":"Was the customer charged more than once?"}}})"));
  cases.push_back(post("choice alone",
                       R"({"state":"The app crashes every time I open the settings page.","questions":{"team":{"type":"choice","instructions":"Which team should handle this ticket?","criteria":{"billing":"Payments, invoices and refunds","technical":"Bugs, crashes and errors","account":null}}}})"));
  cases.push_back(post("score alone",
                       R"({"state":"This is the third time I have asked. Fix it now!","questions":{"anger":{"type":"score","instructions":"How angry is the customer?","criteria":["calm","annoyed","furious"]}}})"));
  cases.push_back(post("all three types together",
                       R"({"state":"Hello, my invoice shows two charges for March and nobody answers my emails.","questions":{"team":{"type":"choice","instructions":"Route the ticket.","criteria":{"billing":"Payments","technical":"Bugs","sales":null,"other":null}},"duplicate":{"type":"noul","instructions":"Was the customer charged twice?","criteria":{"true":"two or more charges","false":"a single charge"}},"urgency":{"type":"score","criteria":["low","medium","high","critical"]}}})"));
  cases.push_back(post("unicode state, options and keys",
                       R"({"state":"Commande n°4521 : colis reçu abîmé 📦 — 返金をお願いします。Ünïcödé “quotes” and a tab\tinside.","questions":{"catégorie":{"type":"choice","instructions":"Quelle équipe ? どのチーム？","criteria":{"remboursement":"argent rendu 💶","échange":null,"返金":"払い戻し","Ωmega":null}},"緊急":{"type":"noul","instructions":"Est-ce urgent ?"},"niveau😀":{"type":"score","criteria":["ruhig","verärgert","wütend"]}}})"));
  cases.push_back(post("structured JSON state",
                       R"({"state":{"ticket":{"id":4521,"channel":"email","vip":true,"amount":12.5,"priority":null,"tags":["shipping","late"],"messages":[{"from":"customer","text":"Where is my order?"},{"from":"agent","text":"Checking."}]}},"questions":{"intent":{"type":"choice","instructions":{"task":"classify the intent","hints":["shipping","refund"]},"criteria":{"shipping":{"description":"Where is my parcel"},"refund":["money back","return"],"other":null}},"escalate":{"type":"noul","instructions":["Escalate?","Only if VIP and late."]}}})"));
  cases.push_back(post("array state, ten-level score",
                       R"({"state":["first message: the login page is slow","second message: now it times out"],"questions":{"severity":{"type":"score","instructions":"Rate the severity.","criteria":["0","1","2","3","4","5","6","7","8","9"]}}})"));
  cases.push_back(post("score with object levels",
                       R"({"state":"The whole service has been down for two hours.","questions":{"impact":{"type":"score","instructions":{"rate":"business impact"},"criteria":[{"label":"low","max_users":10},{"label":"medium"},{"label":"high","examples":["outage","data loss"]},["critical","all customers"]]}}})"));
  cases.push_back(post("invalid request (422)",
                       R"({"state":"x","questions":{"q":{"type":"choice","criteria":{}},"r":{"type":"maybe"}}})", 422));
  return cases;
}

namespace {

struct CompareFlags {
  std::string direct;
  std::string via;
  std::optional<std::string> model;
  std::string token_env;
  int64_t timeout_ms = 60000;
};

std::string fresh_request_id() {
  std::random_device device;
  std::mt19937_64 generator(device());
  return fmt::format("s1compare-{:016x}", generator());
}

struct Side {
  std::optional<ObservedResponse> response;
  std::string error;
};

Side send(HttpClient& client, const CompareCase& test, const HeaderList& headers) {
  Side side;
  try {
    HttpResponse response = client.request(test.method, test.path, test.body, headers);
    side.response = ObservedResponse{response.status, response.header("content-type").value_or(""), std::move(response.body)};
  } catch (const HttpError& error) {
    side.error = std::string(http_error_kind_name(error.kind())) + " error: " + error.what();
  }
  return side;
}

int run_compare(const CompareFlags& flags) {
  Url direct_url;
  Url via_url;
  try {
    direct_url = parse_url(flags.direct);
    via_url = parse_url(flags.via);
  } catch (const std::invalid_argument& error) {
    std::cerr << "compare: " << error.what() << "\n";
    return 2;
  }
  std::optional<std::string> token;
  if (!flags.token_env.empty()) {
    const char* value = std::getenv(flags.token_env.c_str());
    if (value == nullptr || *value == '\0') {
      std::cerr << "compare: environment variable " << flags.token_env << " is not set or empty\n";
      return 2;
    }
    token = value;
  }
  HttpClientOptions options;
  options.read_timeout = std::chrono::milliseconds(flags.timeout_ms);
  HttpClient direct(direct_url, options);
  HttpClient via(via_url, options);

  std::cout << "compare  direct " << direct_url.to_string() << "  via " << via_url.to_string() << "\n";
  if (flags.model) std::cout << "  model " << nlohmann::json(*flags.model).dump() << "\n";
  const std::string request_id = fresh_request_id();
  size_t identical = 0;
  size_t index = 0;
  const std::vector<CompareCase> cases = compare_cases(flags.model);
  for (const CompareCase& test : cases) {
    ++index;
    HeaderList headers{{"x-request-id", request_id + "-" + std::to_string(index)}};
    // The key goes to both sides and nowhere else: never printed, never written.
    if (token) headers.emplace_back("Authorization", "Bearer " + *token);
    Side a = send(direct, test, headers);
    Side b = send(via, test, headers);

    std::vector<std::string> problems;
    std::string statuses;
    if (!a.response || !b.response) {
      if (!a.response) problems.push_back("direct: " + a.error);
      if (!b.response) problems.push_back("via: " + b.error);
      statuses = fmt::format("{} / {}", a.response ? std::to_string(a.response->status) : "---",
                             b.response ? std::to_string(b.response->status) : "---");
    } else {
      statuses = fmt::format("{} / {}", a.response->status, b.response->status);
      ObservedResponse left = *a.response;
      ObservedResponse right = *b.response;
      if (!test.compare_body) left.body = right.body = "";
      ResponseComparison comparison = compare_responses(left, right);
      problems = std::move(comparison.differences);
      for (const auto* side : {&*a.response, &*b.response}) {
        if (side->status != test.expected_status) {
          problems.push_back(fmt::format("{}: expected status {}, got {}", side == &*a.response ? "direct" : "via",
                                         test.expected_status, side->status));
        }
      }
    }
    const bool same = problems.empty();
    if (same) ++identical;
    std::string verdict;
    if (!same) verdict = "DIFFERENT";
    else if (test.compare_body) verdict = fmt::format("identical ({} bytes)", a.response->body.size());
    else verdict = "status and content type identical (bodies not compared)";
    std::cout << fmt::format("  {:<34} {:<10} {}\n", test.name, statuses, verdict);
    for (const std::string& line : problems) std::cout << "      " << line << "\n";
  }
  std::cout << fmt::format("{} of {} identical\n", identical, cases.size());
  return identical == cases.size() ? 0 : 1;
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto flags = std::make_shared<CompareFlags>();
  CLI::App* command = app.add_subcommand(
      "compare", "Send the same fixed requests to a worker directly and through a router; exit 0 only when every "
                 "status, Content-Type and body is byte-identical");
  command->add_option("--direct", flags->direct, "Base URL of the worker, http://host:port[/base]")->required();
  command->add_option("--via", flags->via, "Base URL of the router in front of it")->required();
  command->add_option("--model", flags->model, "Model name to put in every request (default: the servers' default)");
  command->add_option("--token-env", flags->token_env,
                      "Environment variable holding a bearer key sent to both sides (never printed)");
  command->add_option("--timeout-ms", flags->timeout_ms, "Per-request timeout in ms (default 60000)");
  command->callback([flags] { std::exit(run_compare(*flags)); });
}

}  // namespace s1::cli
