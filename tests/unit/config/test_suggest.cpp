// Did-you-mean suggestions and probe target checks.

#include "tests/unit/config/config_doctest.hpp"

#include <array>

#include "config/probe_targets.hpp"
#include "config/suggest.hpp"

using namespace pkit::config::detail;

TEST_CASE("edit distance counts swaps of neighbours as one edit") {
    CHECK(edit_distance("", "") == 0);
    CHECK(edit_distance("abc", "abc") == 0);
    CHECK(edit_distance("max_backof", "max_backoff") == 1);
    CHECK(edit_distance("polciy", "policy") == 1);
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(edit_distance("", "abc") == 3);
}

TEST_CASE("suggestions only for likely typos") {
    constexpr std::array<std::string_view, 4> keys{"policy", "max_restarts", "max_backoff", "as"};
    CHECK(closest("max_backof", keys) == "max_backoff");
    CHECK(closest("polcy", keys) == "policy");
    CHECK(closest("Policy", keys) == "policy");
    CHECK(closest("max_restart", keys) == "max_restarts");
    CHECK_FALSE(closest("xy", keys).has_value());
    CHECK_FALSE(closest("something", keys).has_value());
    CHECK_FALSE(closest("policy", keys).has_value());  // an exact name is not a typo
    CHECK(closest("ass", keys) == "as");
}

TEST_CASE("did you mean: the tail of an unknown-name message, among many names") {
    std::vector<std::string> names;
    for (int i = 0; i < 1000; ++i) {
        names.push_back("svc-" + std::to_string(i));
    }
    names.push_back("web");
    CHECK(did_you_mean("wbe", names) == "; did you mean \"web\"?");
    CHECK(did_you_mean("svc-9999", names) == "; did you mean \"svc-999\"?");
    CHECK(did_you_mean("database", names).empty());
    CHECK(did_you_mean("web", names).empty());  // exact: nothing to suggest
}

TEST_CASE("tcp targets are host:port") {
    CHECK_FALSE(check_tcp_target("127.0.0.1:8080").has_value());
    CHECK_FALSE(check_tcp_target("localhost:1").has_value());
    CHECK_FALSE(check_tcp_target("[::1]:65535").has_value());
    CHECK(check_tcp_target("localhost") ==
          "\"localhost\" is not \"host:port\" (e.g. \"127.0.0.1:8080\")");
    CHECK(check_tcp_target(":80") == "the host is missing");
    CHECK(check_tcp_target("host:0") == "port \"0\" is not a number from 1 to 65535");
    CHECK(check_tcp_target("host:65536") == "port \"65536\" is not a number from 1 to 65535");
    CHECK(check_tcp_target("host:http") == "port \"http\" is not a number from 1 to 65535");
    CHECK(check_tcp_target("::1:80") ==
          "\"::1\" is not a host name or address (write IPv6 as \"[::1]\")");
    CHECK(check_tcp_target("[::1:80") == "an IPv6 address needs its closing \"]\"");
}

TEST_CASE("http targets are http://host[:port][/path]") {
    CHECK_FALSE(check_http_target("http://127.0.0.1:8080/healthz").has_value());
    CHECK_FALSE(check_http_target("http://localhost").has_value());
    CHECK_FALSE(check_http_target("http://[::1]/x?y=1").has_value());
    CHECK(check_http_target("https://example.com/") ==
          "https is not supported (the probe speaks plain HTTP); use an http:// URL");
    CHECK(check_http_target("localhost:80/x") ==
          "\"localhost:80/x\" is not an http://host[:port][/path] URL");
    CHECK(check_http_target("http:///x") == "the host is missing");
    CHECK(check_http_target("http://h:99999/") == "port \"99999\" is not a number from 1 to 65535");
    CHECK(check_http_target("http://u@h/") ==
          "user information (\"user@\") is not supported in the URL");
    CHECK(check_http_target("http://h/a b") ==
          "the path must not contain spaces or control characters (percent-encode them)");
}
