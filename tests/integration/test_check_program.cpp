// --check looks for each service's program where a run's launch would (SPEC §21): a
// missing argv[0] is a positioned warning, with the nearest name when it looks like a
// typo, and the tree stays valid (exit 0); pkitctl check says the same.

#include <sys/stat.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// DIR/bin/tool (executable) and DIR/bin/data (not executable).
void tools(const TempDir& dir) {
    dir.script("bin/tool", "exit 0\n");
    write_file(dir.path() / "bin" / "data", "not a program\n");
    ::chmod(dir.file("bin/data").c_str(), 0644);
}

// The warning lines of `text` about `service`'s file.
std::vector<std::string> warnings_of(const std::string& text, const TempDir& dir,
                                     const std::string& service) {
    std::vector<std::string> out;
    const std::string file = dir.str() + "/services/" + service + ".toml:";
    for (const std::string& line : lines_of(text)) {
        if (line.starts_with(file) && line.find(": warning: ") != std::string::npos) {
            out.push_back(line);
        }
    }
    return out;
}

std::string argv_of(const std::string& program) {
    return "command = [" + toml_str(program) + ", \"--flag\"]\n";
}

}  // namespace

TEST_CASE("--check warns at argv[0] when the launch would not find it, and the tree stays valid") {
    TempDir dir;
    tools(dir);
    const std::string bin = dir.file("bin");
    // Found: no warning.
    dir.service("absolute", argv_of(bin + "/tool"));
    dir.service("in-env-path",
                "env = { PATH = " + toml_str(bin + ":/usr/bin") + " }\n" + argv_of("tool"));
    dir.service("relative", "cwd = " + toml_str(dir.str()) + "\n" + argv_of("bin/tool"));
    dir.service("variable", "env = { TOOLS = " + toml_str(bin) + " }\n" + argv_of("${TOOLS}/tool"));
    dir.service("from-path", argv_of("sh"));
    // An env_file may set PATH: a bare name is not looked for.
    write_file(dir.path() / "vars.env", "PATH=" + bin + "\n");
    dir.service("env-file",
                "env_file = " + toml_str(dir.file("vars.env")) + "\n" + argv_of("tool"));
    // Not found.
    dir.service("typo", "# the typo of issue 45\n" + argv_of(bin + "/tol"));
    dir.service("bare", "env = { PATH = " + toml_str(bin) + " }\n" + argv_of("tol"));
    dir.service("nowhere", argv_of("no-such-program-anywhere"));
    dir.service("not-executable", argv_of(bin + "/data"));
    dir.service("directory", argv_of(bin));
    dir.service("relative-missing", "cwd = " + toml_str(dir.str()) + "\n" + argv_of("bin/toool"));
    dir.service("variable-missing",
                "env = { TOOLS = " + toml_str(bin) + " }\n" + argv_of("${TOOLS}/tol"));

    const auto result = run_pkitd({"--check", "--config", dir.str()});
    INFO(result.all());
    CHECK(result.exit_code == 0);
    CHECK(result.out.find("configuration OK: 13 services") != std::string::npos);
    for (const char* quiet :
         {"absolute", "in-env-path", "relative", "variable", "from-path", "env-file"}) {
        CHECK_MESSAGE(warnings_of(result.err, dir, quiet).empty(), quiet);
    }
    auto only = [&](const std::string& service) {
        auto lines = warnings_of(result.err, dir, service);
        REQUIRE_MESSAGE(lines.size() == 1, service);
        return lines.front();
    };
    const std::string file = dir.str() + "/services/";
    CHECK(only("typo") == file + "typo.toml:2:12: warning: command: \"" + bin +
                              "/tol\" does not exist; did you mean \"" + bin +
                              "/tool\"?; a run would fail with not_found");
    CHECK(only("bare") == file +
                              "bare.toml:2:12: warning: command: \"tol\" is not found in "
                              "PATH \"" +
                              bin +
                              "\" (the service's env); did you mean \"tool\"?; a run "
                              "would fail with not_found");
    const std::string nowhere = only("nowhere");
    CHECK_MESSAGE(nowhere.starts_with(file + "nowhere.toml:1:12: warning: command: "
                                             "\"no-such-program-anywhere\" is not found in PATH "
                                             "\""),
                  nowhere);
    CHECK(nowhere.ends_with("\" (pkitd's environment); a run would fail with not_found"));
    CHECK(only("not-executable") == file + "not-executable.toml:1:12: warning: command: \"" + bin +
                                        "/data\" is not an executable file; a run would "
                                        "fail with permission_denied");
    CHECK(only("directory") == file + "directory.toml:1:12: warning: command: \"" + bin +
                                   "\" is a directory; a run would fail with permission_denied");
    CHECK(only("relative-missing") ==
          file +
              "relative-missing.toml:2:12: warning: command: \"bin/toool\" does not exist; did "
              "you mean \"bin/tool\"?; a run would fail with not_found");
    CHECK(only("variable-missing") ==
          file + "variable-missing.toml:2:12: warning: command: \"${TOOLS}/tol\" (\"" + bin +
              "/tol\") does not exist; did you mean \"" + bin +
              "/tool\"?; a run would fail with not_found");

    // pkitctl check: the same warnings, still valid.
    const auto checked = run_ctl({"check", dir.str()});
    CHECK_MESSAGE(checked.exit_code == 0, checked.all());
    CHECK(warnings_of(checked.err, dir, "typo") == warnings_of(result.err, dir, "typo"));
    CHECK(warnings_of(checked.err, dir, "bare") == warnings_of(result.err, dir, "bare"));
}

TEST_CASE("--check's program warning looks in pkitd's own PATH, not only the default") {
    TempDir dir;
    tools(dir);
    dir.service("tool", argv_of("tool"));
    const auto without = run_pkitd({"--check", "--config", dir.str()}, 20s);
    CHECK_MESSAGE(without.exit_code == 0, without.all());
    CHECK(warnings_of(without.err, dir, "tool").size() == 1);
    const auto with = run_command({"/usr/bin/env", "PATH=" + dir.file("bin") + ":/usr/bin:/bin",
                                   PKITD_BIN, "--check", "--config", dir.str()},
                                  20s);
    CHECK_MESSAGE(with.exit_code == 0, with.all());
    CHECK_MESSAGE(warnings_of(with.err, dir, "tool").empty(), with.err);
    // clear_env: pkitd's PATH is not the run's; the default is.
    dir.service("tool", "clear_env = true\n" + argv_of("tool"));
    const auto cleared = run_command({"/usr/bin/env", "PATH=" + dir.file("bin") + ":/usr/bin:/bin",
                                      PKITD_BIN, "--check", "--config", dir.str()},
                                     20s);
    CHECK_MESSAGE(cleared.exit_code == 0, cleared.all());
    const auto lines = warnings_of(cleared.err, dir, "tool");
    REQUIRE_MESSAGE(lines.size() == 1, cleared.err);
    CHECK(lines.front().find("PATH \"/usr/local/bin:/usr/bin:/bin\" (the default)") !=
          std::string::npos);
}
