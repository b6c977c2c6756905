// The pure pieces of the endpoint: label escaping, the router's answers, the response
// bytes, and /proc/PID/stat parsing for resources.

#include <doctest/doctest.h>

#include "daemon/shell/http/metrics.hpp"
#include "daemon/shell/http/router.hpp"
#include "daemon/shell/io/resources.hpp"

namespace pkit::shell::http {
namespace {

TEST_CASE("metrics: label values escape backslash, quote and newline") {
    CHECK(escape_label("plain") == "plain");
    CHECK(escape_label("a\\b\"c\nd") == "a\\\\b\\\"c\\nd");
}

TEST_CASE("metrics: a render in slices of any size gives the same exposition as one in a go") {
    MetricsSnapshot snap;
    snap.version = "1.2.3";
    snap.ready = true;
    for (int i = 0; i < 5; ++i) {
        MetricsRow row;
        row.labels = "{service=\"s" + std::to_string(i) + "\"";
        row.state = i % 2 == 0 ? core::State::running : core::State::backoff;
        row.runs = i;
        if (i == 3) {
            row.healthy = true;
            row.last_exit_code = 2;
            row.oom_kills = 4;
        }
        if (i == 4) {  // a scheduled job with a log file
            row.next_run = 1700000000.5;
            row.missed_runs = 2;
            row.log_bytes = 4096;
            row.log_dropped = 3;
            row.log_rotations = 1;
        }
        snap.rows.push_back(row);
    }
    MetricsRender whole(snap);
    REQUIRE(whole.step(SIZE_MAX));
    const std::string expected = whole.take();
    CHECK(expected.find("pkit_service_state{service=\"s1\",state=\"backoff\"} 1\n") !=
          std::string::npos);
    CHECK(expected.find("pkit_service_healthy{service=\"s3\"} 1\n") != std::string::npos);
    CHECK(expected.find("pkit_service_healthy{service=\"s2\"}") == std::string::npos);
    CHECK(expected.find("# HELP pkit_service_oom_kills_total Runs during which the kernel's OOM "
                        "killer killed") != std::string::npos);
    CHECK(expected.find("# TYPE pkit_service_oom_kills_total counter\n") != std::string::npos);
    CHECK(expected.find("pkit_service_oom_kills_total{service=\"s3\"} 4\n") != std::string::npos);
    CHECK(expected.find("pkit_service_oom_kills_total{service=\"s2\"} 0\n") != std::string::npos);
    CHECK(expected.find("pkit_service_resident_memory_bytes{service=\"s4\"} 0\n") !=
          std::string::npos);
    CHECK(expected.find("pkit_service_next_run_timestamp_seconds{service=\"s4\"} 1700000000.5\n") !=
          std::string::npos);
    CHECK(expected.find("pkit_service_missed_runs_total{service=\"s3\"}") == std::string::npos);
    CHECK(expected.find("pkit_service_missed_runs_total{service=\"s4\"} 2\n") != std::string::npos);
    // SPEC §18: the log file families, for services with a file only, last.
    CHECK(expected.find("pkit_service_log_bytes_total{service=\"s4\"} 4096\n") !=
          std::string::npos);
    CHECK(expected.find("pkit_service_log_bytes_total{service=\"s3\"}") == std::string::npos);
    CHECK(expected.find("pkit_service_log_dropped_lines_total{service=\"s4\"} 3\n") !=
          std::string::npos);
    CHECK(expected.ends_with("pkit_service_log_rotations_total{service=\"s4\"} 1\n"));
    for (std::size_t slice : {std::size_t{1}, std::size_t{7}, std::size_t{100}}) {
        MetricsRender render(snap);
        int steps = 1;
        while (!render.step(slice)) {
            ++steps;
        }
        CHECK(render.take() == expected);
        CHECK(steps > 1);
    }
    MetricsRender empty(MetricsSnapshot{});
    CHECK(empty.step(1));
    CHECK(empty.take().find("# TYPE pkit_service_resident_memory_bytes gauge\n") !=
          std::string::npos);
}

TEST_CASE("router: GET and HEAD only, the four paths, 404 for the rest") {
    Sources sources{[] {
                        return std::pair{false, std::string("{\"ready\":false}")};
                    },
                    [] { return MetricsSnapshot{}; }};
    auto get = [&](std::string method, std::string path) {
        return route(Request{std::move(method), std::move(path), 1, 1, true}, sources);
    };
    CHECK(get("GET", "/healthz").status == 200);
    CHECK(get("GET", "/healthz").body == "ok\n");
    CHECK(get("HEAD", "/livez").status == 200);
    CHECK(get("GET", "/readyz").status == 503);
    CHECK(get("GET", "/readyz").body == "{\"ready\":false}\n");
    CHECK(get("GET", "/metrics").content_type == "text/plain; version=0.0.4");
    CHECK(get("GET", "/metrics").metrics);  // its body comes from the MetricsCache
    CHECK_FALSE(get("GET", "/healthz").metrics);
    CHECK(get("GET", "/etc/passwd").status == 404);
    CHECK(get("GET", "/../metrics").status == 404);
    CHECK(get("POST", "/metrics").status == 405);
    CHECK(get("PUT", "/healthz").status == 405);
}

TEST_CASE("response: HEAD keeps the Content-Length and drops the body") {
    Response r{200, "text/plain", "hello", false};
    std::string full = serialize(r, true, false, 1);
    std::string head = serialize(r, true, true, 1);
    CHECK(full.starts_with("HTTP/1.1 200 OK\r\n"));
    CHECK(full.find("Content-Length: 5\r\n") != std::string::npos);
    CHECK(full.ends_with("\r\n\r\nhello"));
    CHECK(head.find("Content-Length: 5\r\n") != std::string::npos);
    CHECK(head.ends_with("\r\n\r\n"));
    CHECK(serialize(r, false, false, 1).find("Connection: close\r\n") != std::string::npos);
    CHECK(serialize(r, true, false, 0).find("Connection: keep-alive\r\n") != std::string::npos);
}

TEST_CASE("response: the Date header in IMF-fixdate, when set") {
    CHECK(http_date(784111777) == "Sun, 06 Nov 1994 08:49:37 GMT");
    CHECK(http_date(0) == "Thu, 01 Jan 1970 00:00:00 GMT");
    Response r{200, "text/plain", "hello", false};
    r.date = http_date(784111777);
    CHECK(serialize(r, true, false, 1)
              .starts_with("HTTP/1.1 200 OK\r\nDate: Sun, 06 Nov 1994 08:49:37 GMT\r\n"));
}

TEST_CASE("resources: a /proc/PID/stat line with spaces and parentheses in comm") {
    std::string line =
        "4242 (a b) c) S 1 4240 4240 0 -1 4194560 100 0 0 0 250 50 30 20 20 0 1 0 12345 "
        "1000000 1280 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";
    ProcStat stat;
    REQUIRE(parse_proc_stat(line, stat));
    CHECK(stat.pgid == 4240);
    CHECK(stat.state == 'S');
    CHECK(stat.utime == 250);
    CHECK(stat.stime == 50);
    CHECK(stat.cutime == 30);
    CHECK(stat.cstime == 20);
    CHECK(stat.rss_pages == 1280);
    CHECK_FALSE(parse_proc_stat("4242 (x) S 1 2", stat));
    CHECK_FALSE(parse_proc_stat("garbage", stat));
}

}  // namespace
}  // namespace pkit::shell::http
