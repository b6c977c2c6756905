// output_matches patterns (config/pattern.hpp, SPEC §2): RE2 syntax searched in the
// first 2 KiB of one line, at most 4 KiB and 250 RE2 instructions, a rejected pattern a
// positioned error at its value, and no pattern or line that can crash or hang the
// search.

#include "tests/unit/config/config_doctest.hpp"

#include "config/pattern.hpp"
#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

namespace {

Pattern compiled(std::string source) {
    auto p = Pattern::compile(std::move(source));
    REQUIRE_MESSAGE(p.has_value(), p.error());
    return *p;
}

std::string refusal(std::string source) {
    auto p = Pattern::compile(std::move(source));
    REQUIRE_FALSE(p.has_value());
    return p.error();
}

}  // namespace

TEST_CASE("output patterns take RE2 syntax and search anywhere in one line") {
    struct Row {
        const char* pattern;
        const char* line;
        bool matches;
    };
    const Row rows[] = {
        {"FATAL", "x FATAL: config missing", true},
        {"FATAL", "fatal: config missing", false},
        {"(?i)fatal", "Fatal: config missing", true},
        {"^FATAL", "FATAL at the start", true},
        {"^FATAL", "not FATAL at the start", false},
        {"done$", "all done", true},
        {"done$", "done, or not", false},
        {"\\bport \\d+\\b", "listening on port 8080", true},
        {"\\bport \\d+\\b", "transport 8080", false},
        {"[[:upper:]]{3}-\\d{2}", "code ABC-42 seen", true},
        {"\\p{Latin}+ \\p{Greek}", "Zeus Ω", true},
        {"(?P<code>E\\d+)", "error E42", true},
        {"error", "\xff\xfe error \xff", true},  // bytes that are not UTF-8 are searched
        {"a.c", "aéc", true},                    // `.` is one UTF-8 character
        {"a.c", "a\377c", false},                // not a stray byte
    };
    for (const Row& row : rows) {
        CAPTURE(std::string(row.pattern));
        CAPTURE(std::string(row.line));
        CHECK(compiled(row.pattern).search(row.line) == row.matches);
    }
}

TEST_CASE("a byte that is not UTF-8 is matched by no . or negated class, as pkit.toml(5) says") {
    const std::string latin1 = "caf\xe9 down";  // Latin-1 e-acute: not UTF-8
    CHECK(compiled("down").search(latin1));
    CHECK(compiled("caf").search(latin1));
    CHECK_FALSE(compiled("caf. down").search(latin1));
    CHECK_FALSE(compiled("caf[^x] down").search(latin1));
    CHECK(compiled("caf. down").search("caf\xc3\xa9 down"));  // the same in UTF-8
}

TEST_CASE("output patterns compare by their source text and copies share the program") {
    Pattern a = compiled("x+y");
    Pattern b = compiled("x+y");
    Pattern c = a;
    CHECK(a == b);
    CHECK(a == c);
    CHECK_FALSE(a == compiled("x+ y"));
    CHECK(c.search("xxy"));
    CHECK(a.source() == "x+y");
}

TEST_CASE("an output pattern is at most 4 KiB") {
    std::string nested(2047, '(');
    nested.append("aa").append(2047, ')');
    REQUIRE(nested.size() == 4096);
    CHECK(compiled(nested).search("xaax"));
    CHECK(refusal(std::string(4097, 'a')) == "too long (4097 bytes, at most 4096)");
    CHECK(refusal(std::string(100000, '(')) == "too long (100000 bytes, at most 4096)");
}

TEST_CASE("a pattern RE2 rejects is refused with RE2's reason") {
    CHECK(refusal("(a)\\1") == "invalid escape sequence: \\1");
    CHECK(refusal("(unclosed") == "missing ): (unclosed");
    CHECK(refusal("closed)") == "unexpected ): closed)");
    CHECK(refusal("[z-a]") == "invalid character class range: z-a");
    CHECK(refusal("(?=ahead)") == "invalid perl operator: (?=");
    CHECK(refusal("x**") == "bad repetition operator: **");
    CHECK(refusal("a{1001}") == "invalid repetition size: {1001}");
    SUBCASE("a long reason is shortened and its control characters escaped") {
        std::string why = refusal("(\n" + std::string(1000, 'x'));
        CHECK(why.starts_with("missing ): (\\x0a" + std::string(10, 'x')));
        CHECK(why.ends_with("..."));
        CHECK(why.size() <= 125);
        CHECK(why.find('\n') == std::string::npos);
    }
}

// Counted repetitions and large classes make programs whose worst line costs
// milliseconds per instruction and KiB: "\\w{1000}x" took 155 ms on a 16 KiB line.
TEST_CASE("a pattern over 250 RE2 instructions is refused as too complex") {
    CHECK(refusal("\\w{1000}x") == "too complex (3005 RE2 instructions, at most 250)");
    CHECK(refusal("a{1000}b") == "too complex (1005 RE2 instructions, at most 250)");
    CHECK(refusal(std::string(300, 'a')) == "too complex (304 RE2 instructions, at most 250)");
    CHECK(refusal("\\pL") == "too complex (1197 RE2 instructions, at most 250)");
    // Past what RE2's memory budget compiles at all: no count to give.
    CHECK(refusal("\\pL{100}x") == "too complex (over 10,000 RE2 instructions, at most 250)");
    // The limit itself, and ordinary patterns well within it.
    CHECK(compiled("a{245}b").search(std::string(245, 'a') + "b"));
    CHECK(refusal("a{246}b") == "too complex (251 RE2 instructions, at most 250)");
    CHECK(compiled("(?i)(error|fatal|panic|exception|timeout|refused|denied|failed|abort)")
              .search("Connection REFUSED"));
    CHECK(compiled("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
              .search("id 123e4567-e89b-12d3-a456-426614174000"));
    CHECK(compiled("\\w{80}x").search(std::string(80, 'w') + "x"));
}

TEST_CASE("a line is searched in its first 2 KiB only") {
    const std::size_t window = Pattern::k_searched_bytes;
    REQUIRE(window == 2048);
    auto at = [](std::size_t offset, const std::string& word, std::size_t size) {
        std::string line(size, '.');
        line.replace(offset, word.size(), word);
        return line;
    };
    Pattern fatal = compiled("FATAL");
    CHECK(fatal.search(at(window - 5, "FATAL", 16 * 1024)));        // its last byte is the 2048th
    CHECK_FALSE(fatal.search(at(window - 4, "FATAL", 16 * 1024)));  // one byte past
    CHECK_FALSE(fatal.search(at(10000, "FATAL", 16 * 1024)));
    // `$` is the line's real end, not the window's: a longer line never ends in it.
    CHECK(compiled("done$").search(at(window - 4, "done", window)));
    CHECK_FALSE(compiled("done$").search(at(window - 3, "done", window + 1)));
    CHECK_FALSE(compiled("done\\b").search(at(window - 4, "donex", 4096)));
    CHECK(compiled("done\\b").search(at(window - 4, "done ", 4096)));
    // A character across the window's end is not in it.
    std::string accent = at(window - 1, "\xc3\xa9", 4096);
    CHECK_FALSE(compiled("\xc3\xa9").search(accent));
    CHECK(compiled("\xc3\xa9").search(accent.substr(1)));
}

// std::regex overflowed its stack or backtracked for ever on these.
TEST_CASE("pathological patterns on long lines complete") {
    std::string ab;
    for (int i = 0; i < 12000; ++i) {
        ab += i % 2 == 0 ? 'a' : 'b';
    }
    CHECK_FALSE(compiled("(a|b)*c").search(ab));
    CHECK(compiled("(a|b)*c").search(ab.substr(0, 2000) + "c" + ab));
    std::string long_line(16 * 1024, 'x');
    CHECK_FALSE(compiled(".*error.*").search(long_line));
    long_line[800] = 'e';
    long_line.replace(1500, 5, "error");
    CHECK(compiled(".*error.*").search(long_line));
    CHECK_FALSE(compiled("(a*)*b").search(std::string(40, 'a')));
    CHECK(compiled("(a*)*b").search(std::string(40, 'a') + "b"));
    CHECK_FALSE(compiled("(x+x+)+y").search(std::string(16 * 1024, 'x')));
    // Deep nesting, within 4 KiB: compiled without recursion trouble.
    std::string nested = std::string(2000, '(') + "a" + std::string(2000, ')');
    CHECK(compiled(nested).search("a"));
}

TEST_CASE("bad output_matches values are positioned at the value") {
    auto errors = [](const std::string& value) {
        return service_errors("command = [\"x\"]\n[stop_when]\noutput_matches = \"" + value +
                              "\"\n");
    };
    CHECK(errors(std::string(100000, 'a')) ==
          Errors{"services/web.toml:3:18: error: stop_when.output_matches: invalid regular "
                 "expression: too long (100000 bytes, at most 4096)"});
    CHECK(errors("(a)\\\\1") ==
          Errors{"services/web.toml:3:18: error: stop_when.output_matches: invalid regular "
                 "expression: invalid escape sequence: \\1"});
    CHECK(errors("\\\\w{1000}x") ==
          Errors{"services/web.toml:3:18: error: stop_when.output_matches: invalid regular "
                 "expression: too complex (3005 RE2 instructions, at most 250)"});
    CHECK(errors("(a|b") ==
          Errors{"services/web.toml:3:18: error: stop_when.output_matches: invalid regular "
                 "expression: missing ): (a|b"});
    CHECK(errors("") == Errors{"services/web.toml:3:18: error: stop_when.output_matches: must "
                               "not be empty"});
    SUBCASE("every error of the file, each at its own value") {
        CHECK(service_errors("command = [\"x\"]\n[stop_when]\noutput_matches = \"(\"\n"
                             "[give_up_when]\noutput_matches = '\\d+)'\n") ==
              Errors{"services/web.toml:3:18: error: stop_when.output_matches: invalid regular "
                     "expression: missing ): (",
                     "services/web.toml:5:18: error: give_up_when.output_matches: invalid "
                     "regular expression: unexpected ): \\d+)"});
    }
}

TEST_CASE("a valid output_matches lands in the spec as its source") {
    ServiceSpec spec =
        service_spec("command = [\"x\"]\n[stop_when]\noutput_matches = '(?i)^ready\\b'\n");
    REQUIRE(spec.stop_when->output_matches.has_value());
    CHECK(spec.stop_when->output_matches->source() == "(?i)^ready\\b");
    CHECK(spec.stop_when->output_matches->search("READY to serve"));
    CHECK_FALSE(spec.give_up_when->output_matches.has_value());
    CHECK(*spec.stop_when ==
          Predicate{.output_matches = Pattern::compile("(?i)^ready\\b").value()});
}
