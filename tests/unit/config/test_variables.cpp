// Variables of SPEC §13: ${VAR}, ${VAR:-default}, $$, and every other $ kept.

#include "tests/unit/config/config_doctest.hpp"

#include <map>

#include "config/variables.hpp"

using namespace pkit::config;

namespace {

std::map<std::string, std::string, std::less<>> g_env{
    {"PORT", "8080"}, {"EMPTY", ""}, {"HOME", "/home/app"}, {"UNI", "gr\xC3\xBC\xC3\x9F"}};

VariableLookup lookup_in(const std::map<std::string, std::string, std::less<>>& env) {
    return [&env](std::string_view name) -> std::optional<std::string_view> {
        auto found = env.find(name);
        if (found == env.end()) {
            return std::nullopt;
        }
        return std::string_view(found->second);
    };
}

std::string expand(std::string_view text) {
    auto result = expand_variables(text, lookup_in(g_env));
    REQUIRE_MESSAGE(result.has_value(), (result ? "" : result.error().message()));
    return *result;
}

VariableError failure(std::string_view text) {
    auto result = expand_variables(text, lookup_in(g_env));
    REQUIRE_FALSE(result.has_value());
    return result.error();
}

}  // namespace

TEST_CASE("a variable expands to its value, anywhere in the text") {
    CHECK(expand("${PORT}") == "8080");
    CHECK(expand("--port=${PORT}") == "--port=8080");
    CHECK(expand("${HOME}/x:${PORT}") == "/home/app/x:8080");
    CHECK(expand("plain") == "plain");
    CHECK(expand("") == "");
}

TEST_CASE("a default is used when the variable is unset or empty, and may nest") {
    CHECK(expand("${NOPE:-9000}") == "9000");
    CHECK(expand("${PORT:-9000}") == "8080");
    CHECK(expand("${NOPE:-}") == "");
    CHECK(expand("${NOPE:-${PORT}}") == "8080");
    CHECK(expand("${NOPE:-${ALSO_NOPE:-x${PORT}y}}") == "x8080y");
    CHECK(expand("${PORT:-${UNDEFINED}}") == "8080");  // an unused default is not looked up
    CHECK(expand("${NOPE:-a:-b}") == "a:-b");
    CHECK(expand("${NOPE:-}}") == "}");
}

TEST_CASE("an empty value is a value; with a default it counts as unset") {
    CHECK(expand("[${EMPTY}]") == "[]");
    CHECK(expand("[${EMPTY:-d}]") == "[d]");
    CHECK(failure("[${UNSET}]").kind == VariableError::Kind::undefined);
}

TEST_CASE("$$ is one literal $, and any other $ is kept as it is") {
    CHECK(expand("$$") == "$");
    CHECK(expand("$${PORT}") == "${PORT}");
    CHECK(expand("$$$${PORT}") == "$${PORT}");
    CHECK(expand("echo $HOME") == "echo $HOME");
    CHECK(expand("cost: 5$") == "cost: 5$");
    CHECK(expand("$") == "$");
    CHECK(expand("$1 $@ $(x) ${PORT}$") == "$1 $@ $(x) 8080$");
    CHECK(expand("${NOPE:-$$}") == "$");
    CHECK(expand("${NOPE:-$HOME}") == "$HOME");
}

TEST_CASE("bytes outside ASCII pass through, in text, values and defaults") {
    CHECK(expand("\xE2\x82\xAC${UNI}\xE2\x82\xAC") ==
          "\xE2\x82\xAC"
          "gr\xC3\xBC\xC3\x9F"
          "\xE2\x82\xAC");
    CHECK(expand("${NOPE:-\xC3\xA9t\xC3\xA9}") == "\xC3\xA9t\xC3\xA9");
    CHECK(failure("${\xC3\xA9}").kind == VariableError::Kind::bad_name);
}

TEST_CASE("syntax errors say where the ${ is, also inside a default nobody used") {
    auto open = failure("ab${PORT");
    CHECK(open.kind == VariableError::Kind::unterminated);
    CHECK(open.offset == 2);
    CHECK(open.message() == "\"${\" without a closing \"}\"");
    CHECK(failure("${").kind == VariableError::Kind::unterminated);
    CHECK(failure("${NOPE:-${X}").kind == VariableError::Kind::unterminated);
    auto empty = failure("x ${}");
    CHECK(empty.kind == VariableError::Kind::empty_name);
    CHECK(empty.offset == 2);
    CHECK(failure("${:-d}").kind == VariableError::Kind::empty_name);
    auto bad = failure("${PORT:-${}}");
    CHECK(bad.kind == VariableError::Kind::empty_name);
    CHECK(bad.offset == 8);
    CHECK(failure("${A B}").kind == VariableError::Kind::bad_name);
    CHECK(failure("${A-b}").name == "A-b");
    CHECK(check_variables("${PORT:-${}}").has_value());
    CHECK_FALSE(check_variables("${PORT:-${X:-$$}} $HOME $").has_value());
}

TEST_CASE("an undefined variable names itself") {
    auto error = failure("--port ${MISSING_PORT}");
    CHECK(error.kind == VariableError::Kind::undefined);
    CHECK(error.name == "MISSING_PORT");
    CHECK(error.offset == 7);
    CHECK(error.message() == "undefined variable \"MISSING_PORT\"");
    CHECK(failure("${NOPE:-${ALSO}}").name == "ALSO");
}

TEST_CASE("has_variables tells whether expansion could change the text") {
    CHECK(has_variables("${A}"));
    CHECK(has_variables("$$"));
    CHECK_FALSE(has_variables("$HOME and $"));
    CHECK_FALSE(has_variables("plain"));
}

namespace {

// `depth` variables, each the default of the one around it: "${A:-${A:-x}}" for 2.
std::string nested_defaults(std::size_t depth, std::string_view innermost = "x") {
    std::string text;
    text.reserve(depth * 6 + innermost.size());
    for (std::size_t i = 0; i < depth; ++i) {
        text += "${A:-";
    }
    text += innermost;
    text.append(depth, '}');
    return text;
}

}  // namespace

TEST_CASE("defaults nest up to k_max_variable_depth, and one more is a syntax error") {
    static_assert(k_max_variable_depth == 32);  // man/pkit.toml.5 says 32
    CHECK(expand(nested_defaults(32)) == "x");
    CHECK(expand(nested_defaults(31, "${PORT}")) == "8080");  // the 32nd a plain one
    CHECK_FALSE(check_variables(nested_defaults(32)).has_value());
    auto deep = failure(nested_defaults(33));
    CHECK(deep.kind == VariableError::Kind::too_deep);
    CHECK(deep.offset == 32 * 5);  // the 33rd "${"
    CHECK(deep.message() == "variables nested more than 32 deep");
    // Only nesting counts: many variables side by side, in defaults or not, are fine.
    std::string wide = nested_defaults(31, "${PORT}${PORT}${NOPE:-y}");
    CHECK(expand(wide) == "80808080y");
    std::string many;
    for (int i = 0; i < 10000; ++i) {
        many += "${NOPE:-${PORT}}";
    }
    CHECK(expand(many).size() == 40000);
}

TEST_CASE("what counts as nesting is what expansion pairs: $$ and a lone } do not") {
    // "$${" opens nothing, and a "}" with no "${" open is plain text.
    std::string literal;
    for (int i = 0; i < 40; ++i) {
        literal += "$${A:-";
    }
    CHECK(expand(literal).size() == 40 * 5);
    CHECK(expand(std::string(100, '}') + "${PORT}") == std::string(100, '}') + "8080");
    // Closed ones do not count towards the next.
    CHECK(expand(nested_defaults(32) + nested_defaults(32)) == "xx");
    // A "}" closes the innermost: 40 opened and closed one by one never go past 1 deep.
    std::string flat;
    for (int i = 0; i < 40; ++i) {
        flat += "${NOPE:-a}";
    }
    CHECK(expand(flat) == std::string(40, 'a'));
}

TEST_CASE("a million nested defaults are refused at once, without recursing") {
    // Before the bound, each level was one more call of expand_into: this overflowed
    // the stack (SIGSEGV) from about 30,000 levels.
    const std::string deep = nested_defaults(1000000);
    auto checked = check_variables(deep);
    REQUIRE(checked.has_value());
    CHECK(checked->kind == VariableError::Kind::too_deep);
    CHECK(checked->offset == 32 * 5);
    CHECK(failure(deep).kind == VariableError::Kind::too_deep);
    // Unterminated, the same: the depth is found before the missing "}".
    std::string open;
    for (int i = 0; i < 1000000; ++i) {
        open += "${A:-";
    }
    CHECK(failure(open).kind == VariableError::Kind::too_deep);
    CHECK(check_variables(open)->offset == 32 * 5);
}
