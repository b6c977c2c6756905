// pkitctl's human output (SPEC §10), as pure functions of the status rows: durations,
// the last exit in words, aligned columns, colour codes only when asked, the tree.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ctl/render.hpp"
#include "proto/status_rows.hpp"
#include "tests/unit/proto/awkward_status.hpp"

using pkit::ctl::health_text;
using pkit::ctl::last_exit_text;
using pkit::ctl::render_table;
using pkit::ctl::render_tree;
using pkit::ctl::uptime_text;
using pkit::proto::ExitInfo;
using pkit::proto::HealthInfo;
using pkit::proto::ServiceStatus;

namespace {

ServiceStatus service(std::string name, std::string state) {
    ServiceStatus s;
    s.name = std::move(name);
    s.state = std::move(state);
    return s;
}

ServiceStatus running(std::string name, int pid, double uptime) {
    ServiceStatus s = service(std::move(name), "running");
    s.pid = pid;
    s.uptime = uptime;
    s.run = 1;
    return s;
}

ExitInfo exited(int code) {
    ExitInfo e;
    e.code = code;
    return e;
}

ExitInfo killed(std::string signal, std::optional<std::string> by = std::nullopt) {
    ExitInfo e;
    e.signal = std::move(signal);
    e.killed_by = std::move(by);
    return e;
}

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start < text.size()) {
        auto end = text.find('\n', start);
        REQUIRE_MESSAGE(end != std::string::npos, "a last line without newline: " << text);
        out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

// `text` without its ANSI SGR sequences (ESC [ ... m).
std::string strip_sgr(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] == '\033' && i + 1 < text.size() && text[i + 1] == '[') {
            i = text.find('m', i);
            REQUIRE(i != std::string::npos);
            continue;
        }
        out += text[i];
    }
    return out;
}

// Checks that every cell starts at its header's offset: for each column, the cell's
// text is at that offset, preceded by at least two spaces (or the start of the line).
void check_aligned(const std::string& table, const std::vector<std::string>& titles,
                   const std::vector<std::vector<std::string>>& cells) {
    auto lines = lines_of(table);
    REQUIRE(lines.size() == cells.size() + 1);
    INFO("table:\n" << table);
    std::vector<std::size_t> offsets;
    for (const auto& title : titles) {
        auto at = lines[0].find(title, offsets.empty() ? 0 : offsets.back() + 1);
        REQUIRE_MESSAGE(at != std::string::npos, "no column " << title);
        offsets.push_back(at);
    }
    for (std::size_t r = 0; r < cells.size(); ++r) {
        REQUIRE(cells[r].size() == titles.size());
        for (std::size_t c = 0; c < titles.size(); ++c) {
            const auto& line = lines[r + 1];
            const auto at = offsets[c];
            CHECK_MESSAGE(line.substr(at, cells[r][c].size()) == cells[r][c],
                          "row " << r << " column " << titles[c] << ": " << line);
            if (c > 0) {
                CHECK_MESSAGE(line.substr(at - 2, 2) == "  ", "row " << r << ": " << line);
            }
        }
    }
}

}  // namespace

TEST_CASE("uptime_text gives human durations") {
    CHECK(uptime_text(std::nullopt) == "-");
    CHECK(uptime_text(0.0) == "0s");
    CHECK(uptime_text(-5.0) == "0s");  // a clock step never shows a negative uptime
    CHECK(uptime_text(0.25) == "250ms");
    CHECK(uptime_text(1.0) == "1s");
    CHECK(uptime_text(1.9) == "1s");
    CHECK(uptime_text(59.0) == "59s");
    CHECK(uptime_text(60.0) == "1m");
    CHECK(uptime_text(192.0) == "3m12s");
    CHECK(uptime_text(3599.0) == "59m59s");
    CHECK(uptime_text(3600.0) == "1h");
    CHECK(uptime_text(3661.0) == "1h1m");
    CHECK(uptime_text(86399.0) == "23h59m");
    CHECK(uptime_text(86400.0) == "1d");
    CHECK(uptime_text(90000.0) == "1d1h");
}

TEST_CASE("last_exit_text says how the last run ended") {
    ServiceStatus s = service("svc", "backoff");
    CHECK(last_exit_text(s) == "-");
    s.last_exit = exited(1);
    CHECK(last_exit_text(s) == "exit 1");
    s.last_exit = exited(0);
    CHECK(last_exit_text(s) == "exit 0");
    s.last_exit = killed("SIGKILL", "liveness");
    CHECK(last_exit_text(s) == "SIGKILL (liveness)");
    s.last_exit = killed("SIGTERM", "operator");
    CHECK(last_exit_text(s) == "SIGTERM (operator)");
    s.last_exit = killed("SIGSEGV");
    CHECK(last_exit_text(s) == "SIGSEGV");
    ExitInfo timed_out = killed("SIGKILL");
    timed_out.timed_out = true;
    s.last_exit = timed_out;
    CHECK(last_exit_text(s) == "SIGKILL (timeout)");
    // A launch failure is newer than the last exit and wins, code only.
    s.last_launch_error = "not_found: /usr/bin/x: No such file or directory";
    CHECK(last_exit_text(s) == "launch failed: not_found");
}

TEST_CASE("health_text is the liveness status or a dash") {
    ServiceStatus s = service("svc", "running");
    CHECK(health_text(s) == "-");
    s.health = HealthInfo{.status = "unhealthy", .failures = 3};
    CHECK(health_text(s) == "unhealthy");
}

TEST_CASE("render_table aligns every column under its header") {
    ServiceStatus web = running("web", 4242, 192.0);
    web.restarts = 12;
    web.health = HealthInfo{.status = "healthy", .failures = 0};
    ServiceStatus long_name = service("a-much-longer-name", "backoff");
    long_name.last_exit = killed("SIGKILL", "liveness");
    long_name.restarts = 3;
    ServiceStatus job = service("job", "done");
    job.last_exit = exited(0);

    const std::string table = render_table({web, long_name, job}, false);
    CHECK(table.find('\033') == std::string::npos);
    check_aligned(table, {"NAME", "STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "HEALTH"},
                  {
                      {"web", "running", "4242", "3m12s", "12", "-", "healthy"},
                      {"a-much-longer-name", "backoff", "-", "-", "3", "SIGKILL (liveness)", "-"},
                      {"job", "done", "-", "-", "0", "exit 0", "-"},
                  });
    CHECK(table.find("GROUP") == std::string::npos);  // no service in a group
    for (const auto& line : lines_of(table)) {
        CHECK_MESSAGE((line.empty() || line.back() != ' '), "trailing blanks: '" << line << "'");
    }
}

TEST_CASE("render_table adds GROUP after NAME when a service has a group") {
    ServiceStatus a = running("a", 10, 5.0);
    ServiceStatus b = running("b", 11, 65.0);
    b.group = "backend";
    const std::string table = render_table({a, b}, false);
    check_aligned(table,
                  {"NAME", "GROUP", "STATE", "PID", "UPTIME", "RESTARTS", "LAST EXIT", "HEALTH"},
                  {
                      {"a", "-", "running", "10", "5s", "0", "-", "-"},
                      {"b", "backend", "running", "11", "1m5s", "0", "-", "-"},
                  });
}

TEST_CASE("colour codes appear only when colour is on and do not move the columns") {
    ServiceStatus ok = running("ok", 1, 1.0);
    ServiceStatus bad = service("bad", "failed");
    bad.last_exit = exited(1);
    ServiceStatus waiting = service("waiting", "backoff");
    ServiceStatus sick = running("sick", 2, 1.0);
    sick.health = HealthInfo{.status = "unhealthy", .failures = 3};
    const std::vector<ServiceStatus> rows{ok, bad, waiting, sick};

    const std::string plain = render_table(rows, false);
    const std::string coloured = render_table(rows, true);
    CHECK(plain.find('\033') == std::string::npos);
    CHECK(coloured.find("\033[32mrunning\033[0m") != std::string::npos);  // green
    CHECK(coloured.find("\033[31mfailed\033[0m") != std::string::npos);   // red
    CHECK(coloured.find("\033[33mbackoff\033[0m") != std::string::npos);  // yellow
    CHECK(coloured.find("\033[31munhealthy\033[0m") != std::string::npos);
    // The header is never coloured, and without the codes the layout is the same.
    CHECK(lines_of(coloured)[0].find('\033') == std::string::npos);
    CHECK(strip_sgr(coloured) == plain);

    const std::string tree_plain = render_tree(rows, false);
    const std::string tree_coloured = render_tree(rows, true);
    CHECK(tree_plain.find('\033') == std::string::npos);
    CHECK(tree_coloured.find("\033[32mrunning\033[0m") != std::string::npos);
    CHECK(strip_sgr(tree_coloured) == tree_plain);
}

TEST_CASE("render_tree draws each group where its first member comes, members indented") {
    ServiceStatus db = running("db", 20, 30.0);
    ServiceStatus w1 = running("w1", 21, 30.0);
    w1.group = "web";
    ServiceStatus cache = running("cache", 22, 30.0);
    ServiceStatus w2 = service("w2", "stopped");
    w2.group = "web";
    ServiceStatus q = running("q", 23, 30.0);
    q.group = "queue";

    const std::string tree = render_tree({db, w1, cache, w2, q}, false);
    auto lines = lines_of(tree);
    INFO("tree:\n" << tree);
    REQUIRE(lines.size() == 8);
    CHECK(lines[0].starts_with("NAME"));
    CHECK(lines[0].find("GROUP") == std::string::npos);
    CHECK(lines[1].starts_with("db "));
    CHECK(lines[2] == "web/");
    CHECK(lines[3].starts_with("  w1 "));
    CHECK(lines[4].starts_with("  w2 "));  // members together, though cache started between
    CHECK(lines[5].starts_with("cache "));
    CHECK(lines[6] == "queue/");
    CHECK(lines[7].starts_with("  q "));
    // Member rows are aligned with the others.
    const auto state_at = lines[0].find("STATE");
    CHECK(lines[1].substr(state_at, 7) == "running");
    CHECK(lines[3].substr(state_at, 7) == "running");
    CHECK(lines[4].substr(state_at, 7) == "stopped");
    CHECK(lines[7].substr(state_at, 7) == "running");

    CHECK(lines_of(render_tree({}, false)).size() == 1);  // the header alone
}

TEST_CASE("a TYPE column appears only when a oneshot job is listed") {
    ServiceStatus job = service("migrate", "done");
    job.type = "oneshot";
    std::vector<ServiceStatus> services{job, running("web", 42, 8.0)};
    auto lines = lines_of(render_table(services, false));
    REQUIRE(lines.size() == 3);
    CHECK(lines[0].rfind("NAME     TYPE     STATE", 0) == 0);
    CHECK(lines[1].rfind("migrate  oneshot  done", 0) == 0);
    CHECK(lines[2].rfind("web      service  running", 0) == 0);

    auto plain = lines_of(render_table({running("web", 42, 8.0)}, false));
    CHECK(plain[0].find("TYPE") == std::string::npos);
}

TEST_CASE("the table and the tree read only the fields pkitctl status asks for") {
    // `pkitctl status` asks pkitd for k_rendered_fields only: the rows of such a reply,
    // read as pkitctl reads them, must render exactly as the whole rows, or a column
    // would silently go blank.
    pkit::proto::StatusResult result;
    for (int k = 0; k < 9; ++k) {
        result.services.push_back(pkit::proto::test::awkward_status(k));
    }
    auto cut = pkit::proto::parse_status_rows(
        pkit::proto::ok_reply(nlohmann::json(1), result, pkit::ctl::k_rendered_fields));
    REQUIRE(cut.has_value());
    REQUIRE(cut->has_value());
    for (bool color : {false, true}) {
        CHECK(render_table(**cut, color) == render_table(result.services, color));
        CHECK(render_tree(**cut, color) == render_tree(result.services, color));
    }
}
