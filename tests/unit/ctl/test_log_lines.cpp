// `pkitctl logs`: which lines a tail keeps (--stream, --since, -n), several tails
// interleaved by time, and the NAME | prefix and -t timestamp of each line.

#include <doctest/doctest.h>

#include "ctl/log_lines.hpp"
#include "ctl/time_text.hpp"

using namespace pkit::ctl;
using pkit::proto::json;

namespace {

json line(const std::string& text, double at, const std::string& stream = "stdout") {
    return json{{"stream", stream}, {"text", text}, {"at", at}};
}

std::vector<std::string> texts(const json& lines) {
    std::vector<std::string> out;
    for (const auto& l : lines) {
        out.push_back(l.at("text").get<std::string>());
    }
    return out;
}

}  // namespace

TEST_CASE("log lines: --since leaves older lines out, -n keeps the last of the rest") {
    json tail = json::array({line("a", 100), line("b", 105, "stderr"), line("c", 110)});
    CHECK(texts(select_lines(tail, {})) == std::vector<std::string>{"a", "b", "c"});
    CHECK(texts(select_lines(tail, {.since = 105.0})) == std::vector<std::string>{"b", "c"});
    CHECK(texts(select_lines(tail, {.since = 111.0})).empty());
    CHECK(texts(select_lines(tail, {.since = 101.0, .last = 1})) == std::vector<std::string>{"c"});
    CHECK(texts(select_lines(tail, {.stream = "stdout", .last = 5})) ==
          std::vector<std::string>{"a", "c"});
    CHECK(texts(select_lines(tail, {.last = 0})).empty());
}

TEST_CASE("log lines: several tails interleave by time, ties keep the services' order") {
    json web = json::array({line("w1", 1.0), line("w2", 3.0), line("w3", 3.0)});
    json worker = json::array({line("k1", 2.0), line("k2", 3.0), line("k3", 4.0)});
    auto all = interleave({"web", "worker"}, {web, worker});
    std::vector<std::string> order;
    for (const auto& [service, l] : all) {
        order.push_back(service + ":" + l.at("text").get<std::string>());
    }
    CHECK(order == std::vector<std::string>{"web:w1", "worker:k1", "web:w2", "web:w3", "worker:k2",
                                            "worker:k3"});
}

TEST_CASE("log lines: NAME | prefix padded to the names' width, -t the local time") {
    json l = line("hello", 1700000000.25);
    CHECK(line_text("web", l, {}) == "hello");
    CHECK(line_text("web", l, {.name_width = 6, .prefixed = true}) == "web    | hello");
    CHECK(line_text("web", l, {.timestamps = true}) == clock_text(1700000000.25) + " hello");
    CHECK(line_text("worker", l, {.timestamps = true, .name_width = 6, .prefixed = true}) ==
          "worker | " + clock_text(1700000000.25) + " hello");
}
