// `status` at scale: globs and --state over the rows pkitd sent, the summary line, and
// long names cut to the terminal's width.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "ctl/global_options.hpp"
#include "ctl/render.hpp"
#include "ctl/status_filter.hpp"

using namespace pkit::ctl;

namespace {

std::vector<NameState> fleet() {
    static const std::vector<std::string> names{"web",     "svc-050", "svc-051",
                                                "svc-060", "api@1",   "api@2"};
    static const std::vector<std::string> states{"running", "running", "backoff",
                                                 "failed",  "running", "scheduled"};
    std::vector<NameState> rows;
    for (std::size_t i = 0; i < names.size(); ++i) {
        rows.push_back({names[i], states[i]});
    }
    return rows;
}

std::string message_of(const std::vector<std::string>& names) {
    try {
        (void)select_rows(fleet(), names, {});
    } catch (const CtlError& error) {
        CHECK(error.status() == k_exit_daemon_error);
        return error.what();
    }
    return "";
}

}  // namespace

TEST_CASE("status selection: names and globs, in pkitd's order, each row once") {
    using V = std::vector<std::size_t>;
    CHECK(select_rows(fleet(), {}, {}) == V{0, 1, 2, 3, 4, 5});
    CHECK(select_rows(fleet(), {"svc-05*"}, {}) == V{1, 2});
    CHECK(select_rows(fleet(), {"api@*"}, {}) == V{4, 5});
    CHECK(select_rows(fleet(), {"svc-0[56]?", "web"}, {}) == V{0, 1, 2, 3});
    CHECK(select_rows(fleet(), {"svc-*", "svc-050"}, {}) == V{1, 2, 3});
    CHECK(is_pattern("web-*"));
    CHECK(is_pattern("api@?"));
    CHECK_FALSE(is_pattern("api@1"));
}

TEST_CASE("status selection: --state keeps the rows in those states") {
    using V = std::vector<std::size_t>;
    CHECK(select_rows(fleet(), {}, {"running"}) == V{0, 1, 4});
    CHECK(select_rows(fleet(), {}, {"backoff", "failed"}) == V{2, 3});
    CHECK(select_rows(fleet(), {}, {"scheduled"}) == V{5});
    CHECK(select_rows(fleet(), {"svc-*"}, {"running"}) == V{1});
    CHECK(select_rows(fleet(), {}, {"paused"}).empty());
    CHECK(split_states({"running,backoff", "failed", "running"}) ==
          std::vector<std::string>{"running", "backoff", "failed"});
    CHECK(split_states({"storm_pause,paused"}) ==
          std::vector<std::string>{"storm_pause", "paused"});
}

namespace {

std::string states_error(const std::vector<std::string>& options) {
    try {
        (void)split_states(options);
    } catch (const CtlError& error) {
        CHECK(error.status() == k_exit_usage);
        return error.what();
    }
    return "";
}

}  // namespace

TEST_CASE("status selection: a --state that is no state is a usage error naming the states") {
    const std::string states =
        " (states: waiting, starting, running, stopping, backoff, storm_pause, stopped, done, "
        "failed, scheduled, paused)";
    CHECK(states_error({"sideways"}) == "--state: unknown state \"sideways\"" + states);
    CHECK(states_error({"running,runing"}) ==
          "--state: unknown state \"runing\"; did you mean \"running\"?" + states);
    CHECK(states_error({"running,"}) == "--state: an empty state in \"running,\"" + states);
    CHECK(states_error({"Running"}).starts_with("--state: unknown state \"Running\""));
    CHECK(service_states().size() == 11);
}

TEST_CASE("status selection: an unknown name is suggested, an empty glob is an error") {
    CHECK(message_of({"wbe"}) == "unknown_service: unknown service \"wbe\"; did you mean \"web\"?");
    CHECK(message_of({"svc-*", "database"}) == "unknown_service: unknown service \"database\"");
    CHECK(message_of({"db-*"}) == "unknown_service: no service matches \"db-*\"");
}

TEST_CASE("status summary: the count of each state, most first") {
    CHECK(summary_line(fleet()) == "6 services: 3 running, 1 backoff, 1 failed, 1 scheduled");
    CHECK(summary_line({{"web", "running"}}) == "1 service: 1 running");
}

TEST_CASE("status width: names cut with an ellipsis to fit the terminal, never below 12") {
    CHECK(fit_columns("short", 10) == "short");
    CHECK(fit_columns("a-very-long-name", 8) == "a-very-\u2026");
    CHECK(columns_of("a-very-\u2026") == 8);
    std::vector<pkit::proto::ServiceStatus> rows(2);
    rows[0].name = std::string(64, 'x');
    rows[0].state = "running";
    rows[1].name = "web";
    rows[1].state = "running";
    const std::string wide = render_table(rows, false);
    CHECK(wide.find(std::string(64, 'x')) != std::string::npos);
    const std::string fitted = render_table(rows, false, 80);
    INFO(fitted);
    std::size_t start = 0;
    while (start < fitted.size()) {
        std::size_t end = fitted.find('\n', start);
        CHECK(columns_of(fitted.substr(start, end - start)) <= 80);
        start = end + 1;
    }
    CHECK(fitted.find("\u2026") != std::string::npos);
    CHECK(fitted.find(std::string(64, 'x')) == std::string::npos);
    // Too narrow to fit at all: names keep 12 columns, the rest is as wide as it is.
    const std::string narrow = render_table(rows, false, 20);
    CHECK(narrow.find(std::string(11, 'x') + "\u2026") != std::string::npos);
}
