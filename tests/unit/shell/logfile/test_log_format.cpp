// The lines of a log file (SPEC §18): text, json and raw, and back.

#include "daemon/shell/logfile/log_format.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

TEST_CASE("a log line's time is RFC 3339 UTC to the millisecond, and reads back") {
    std::string text;
    append_rfc3339_ms(text, 1796418883.1239);  // 2026-12-04T21:14:43.123Z
    CHECK(text == "2026-12-04T21:14:43.123Z");
    text.clear();
    append_rfc3339_ms(text, 951782400.0);  // a leap day
    CHECK(text == "2000-02-29T00:00:00.000Z");
    CHECK(parse_rfc3339_ms("2026-12-04T21:14:43.123Z") == doctest::Approx(1796418883.123));
    CHECK(parse_rfc3339_ms("2000-02-29T00:00:00.000Z") == 951782400.0);
    CHECK_FALSE(parse_rfc3339_ms("2026-12-04 21:14:43.123Z"));
    CHECK_FALSE(parse_rfc3339_ms("2026-13-04T21:14:43.123Z"));
}

TEST_CASE("a log line in each format, and the text and json formats parsed back") {
    LogRecord record{.stream = core::Stream::stderr_,
                     .at = 1796418883.123,
                     .run = 3,
                     .text = "a \"quoted\" line\t\x01"};
    std::string text;
    append_log_line(text, config::LogFormat::text, "web", record);
    CHECK(text == "2026-12-04T21:14:43.123Z err a \"quoted\" line\t\x01\n");
    std::string json;
    append_log_line(json, config::LogFormat::json, "web@2", record);
    CHECK(json ==
          "{\"at\":\"2026-12-04T21:14:43.123Z\",\"service\":\"web@2\",\"run\":3,"
          "\"stream\":\"stderr\",\"text\":\"a \\\"quoted\\\" line\\t\\u0001\"}\n");
    std::string raw;
    append_log_line(raw, config::LogFormat::raw, "web", record);
    CHECK(raw == "a \"quoted\" line\t\x01\n");

    for (auto [format, line] :
         {std::pair{config::LogFormat::text, text}, std::pair{config::LogFormat::json, json}}) {
        auto parsed = parse_log_line(format, std::string_view(line).substr(0, line.size() - 1));
        REQUIRE(parsed);
        CHECK(parsed->stream == core::Stream::stderr_);
        CHECK(parsed->at == doctest::Approx(1796418883.123));
        CHECK(parsed->text == record.text);
    }
    CHECK_FALSE(parse_log_line(config::LogFormat::raw, "anything"));
    CHECK_FALSE(parse_log_line(config::LogFormat::text, "2026-12-04T21:14:43.123Z own x"));
    CHECK_FALSE(parse_log_line(config::LogFormat::json, "{\"at\":1}"));
}

TEST_CASE("json log lines replace text that is not UTF-8, as the protocol does") {
    std::string json;
    append_log_line(json, config::LogFormat::json, "web",
                    LogRecord{.stream = core::Stream::stdout_, .at = 0, .run = 1, .text = "a\xff"});
    CHECK(json.find("\"text\":\"a\xef\xbf\xbd\"") != std::string::npos);
}

}  // namespace pkit::shell::test
