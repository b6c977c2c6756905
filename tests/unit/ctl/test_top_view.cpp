// pkitctl top's pure parts: the frame for a sample, its sorting and CPU %, and the
// terminal output from one frame to the next (only what changed).

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ctl/status_filter.hpp"
#include "ctl/top_view.hpp"

using namespace pkit::ctl;
using pkit::proto::ServiceStatus;

namespace {

ServiceStatus top_row(std::string name, double cpu, std::int64_t rss, int restarts) {
    ServiceStatus s;
    s.name = std::move(name);
    s.state = "running";
    s.pid = 100;
    s.uptime = 10;
    s.restarts = restarts;
    s.resources.asked = true;
    s.resources.value =
        pkit::proto::Resources{.processes = 1, .cpu_seconds = cpu, .rss_bytes = rss};
    return s;
}

// The service names of a frame's rows, top to bottom.
std::vector<std::string> order_of(const std::vector<std::string>& frame) {
    std::vector<std::string> names;
    for (std::size_t i = 2; i < frame.size(); ++i) {
        names.push_back(frame[i].substr(0, frame[i].find(' ')));
    }
    return names;
}

}  // namespace

TEST_CASE("top frame: sorted by CPU over the interval, or by memory, restarts, name") {
    const std::vector<ServiceStatus> first{top_row("web", 1.0, 50 << 20, 0),
                                           top_row("db", 2.0, 10 << 20, 3),
                                           top_row("cache", 0.5, 90 << 20, 1)};
    const CpuSample then = cpu_sample(first, 100.0);
    // Two seconds on: web used 1 s (50 %), db 0.1 s (5 %), cache 0.
    const std::vector<ServiceStatus> second{top_row("web", 2.0, 50 << 20, 0),
                                            top_row("db", 2.1, 10 << 20, 3),
                                            top_row("cache", 0.5, 90 << 20, 1)};
    const CpuSample now = cpu_sample(second, 102.0);
    auto frame = top_frame(second, now, &then, TopSort::cpu, 0, 0);
    REQUIRE(frame.size() == 5);
    CHECK(frame[0].starts_with("3 services: 3 running \u2014 sorted by CPU"));
    CHECK(frame[1].starts_with("NAME"));
    CHECK(order_of(frame) == std::vector<std::string>{"web", "db", "cache"});
    CHECK(frame[2].find("50.0") != std::string::npos);
    CHECK(frame[3].find("5.0") != std::string::npos);
    CHECK(order_of(top_frame(second, now, &then, TopSort::memory, 0, 0)) ==
          std::vector<std::string>{"cache", "web", "db"});
    CHECK(order_of(top_frame(second, now, &then, TopSort::restarts, 0, 0)) ==
          std::vector<std::string>{"db", "cache", "web"});
    CHECK(order_of(top_frame(second, now, &then, TopSort::name, 0, 0)) ==
          std::vector<std::string>{"cache", "db", "web"});
    // The first frame: CPU since the run started (db: 2.1 s over 10 s of uptime).
    auto first_frame = top_frame(second, now, nullptr, TopSort::cpu, 0, 0);
    CHECK(first_frame[2].starts_with("db "));
    CHECK(first_frame[2].find("21.0") != std::string::npos);
    CHECK(sort_for_key('m') == TopSort::memory);
    CHECK(sort_for_key('x') == std::nullopt);
}

TEST_CASE("top frame: fits the screen, names cut first, rows beyond its height left out") {
    std::vector<ServiceStatus> rows;
    for (int i = 0; i < 30; ++i) {
        rows.push_back(top_row("a-service-with-a-rather-long-name-" + std::to_string(i), i, 1, 0));
    }
    const CpuSample now = cpu_sample(rows, 1.0);
    auto frame = top_frame(rows, now, nullptr, TopSort::cpu, 60, 10);
    CHECK(frame.size() == 10);
    for (const auto& line : frame) {
        CHECK(columns_of(line) <= 60);
    }
    CHECK(frame[2].find("\u2026") != std::string::npos);
    CHECK(frame[1].starts_with("NAME"));
}

TEST_CASE("frame diff: only the changed lines, in place; the rest cleared") {
    const std::vector<std::string> a{"header", "row one", "row two", "row three"};
    CHECK(frame_diff(a, a, false).empty());
    const std::vector<std::string> b{"header", "row one", "row 2", "row three"};
    CHECK(frame_diff(a, b, false) == "\033[3;1Hrow 2\033[K");
    const std::vector<std::string> shorter{"header", "row one"};
    CHECK(frame_diff(a, shorter, false) == "\033[3;1H\033[K\033[4;1H\033[K");
    const std::vector<std::string> longer{"header", "row one", "row two", "row three", "four"};
    CHECK(frame_diff(a, longer, false) == "\033[5;1Hfour\033[K");
    CHECK(frame_diff(a, shorter, true) ==
          "\033[H\033[2J\033[1;1Hheader\033[K\033[2;1Hrow one\033[K");
    CHECK(frame_diff({}, shorter, false) == "\033[1;1Hheader\033[K\033[2;1Hrow one\033[K");
}
