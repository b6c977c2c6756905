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
