// pkitctl's shell completions (packaging/completions): bash, zsh and fish each offer
// the commands, `--for` values of `wait`, a live service name from the running pkitd
// over the socket given as `--socket=PATH` (or `--socket PATH`), and signal names after
// `signal NAME`. bash runs its completion function as bash would (COMP_WORDS split at
// "=", COMPREPLY from compgen); zsh autoloads it from $fpath as _pkitctl and runs it
// with `words` and `CURRENT`, compadd recording what it offers; fish asks `complete -C`. A shell
// that is not installed is skipped with the reason.

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

fs::path completions_dir() {
    return fs::path(PKIT_SOURCE_DIR) / "packaging" / "completions";
}

// The words a completion offered, one a line (fish adds "\tdescription").
std::vector<std::string> offered(const std::string& out) {
    std::vector<std::string> words;
    std::istringstream in(out);
    for (std::string line; std::getline(in, line);) {
        line = line.substr(0, line.find('\t'));
        if (!line.empty()) {
            words.push_back(line);
        }
    }
    return words;
}

bool offers(const std::vector<std::string>& words, const std::string& word) {
    return std::find(words.begin(), words.end(), word) != words.end();
}

// The executable `name` in PATH, or "" (run_command wants a path).
std::string program_path(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path ? path : "/usr/bin:/bin");
    for (std::string dir; std::getline(dirs, dir, ':');) {
        const fs::path candidate = fs::path(dir) / name;
        if (!dir.empty() && ::access(candidate.c_str(), X_OK) == 0) {
            return candidate.string();
        }
    }
    return "";
}

// Single-quoted for sh, zsh and fish alike (the paths here have no quote).
std::string q(const std::string& text) {
    return "'" + text + "'";
}

// What bash completes for the line `words` with the cursor on the last word.
std::vector<std::string> bash_complete(const std::vector<std::string>& words) {
    std::string array;
    for (const auto& w : words) {
        array += q(w) + " ";
    }
    const std::string script = "source " + q((completions_dir() / "pkitctl.bash").string()) +
                               "\nCOMP_WORDS=(" + array +
                               ")\nCOMP_CWORD=" + std::to_string(words.size() - 1) +
                               "\n_pkitctl\nprintf '%s\\n' \"${COMPREPLY[@]}\"\n";
    const auto r = run_command({program_path("bash"), "--norc", "-c", script});
    INFO("bash: " << r.all());
    CHECK(r.exit_code == 0);
    return offered(r.out);
}

// zsh autoloads the completion from $fpath under its installed name, _pkitctl, as
// compinit does; compadd (a builtin only inside completion) prints what it is given,
// one word a line, with its description (compadd -d ARRAY) after a tab.
std::string zsh_output(const TempDir& dir, const std::vector<std::string>& words) {
    const fs::path functions = dir.path() / "zsh-functions";
    fs::create_directories(functions);
    fs::copy_file(completions_dir() / "pkitctl.zsh", functions / "_pkitctl",
                  fs::copy_options::overwrite_existing);
    std::string array;
    for (const auto& w : words) {
        array += q(w) + " ";
    }
    const std::string script =
        "fpath=(" + q(functions.string()) + " $fpath)\nautoload -Uz _pkitctl\n" +
        "compadd() {\n"
        "  local -a d; local i\n"
        "  while [[ $1 == -* && $1 != -- ]]; do\n"
        "    case $1 in (-d) d=(\"${(@P)2}\"); shift 2 ;; (*) shift ;; esac\n"
        "  done\n"
        "  [[ $1 == -- ]] && shift\n"
        "  for (( i = 1; i <= $#; i++ )); do print -r -- \"${@[i]}${d[i]:+\t${d[i]}}\"; done\n"
        "}\n_files() { }\n" +
        "words=(" + array + ")\nCURRENT=" + std::to_string(words.size()) + "\n_pkitctl\n";
    const auto r = run_command({program_path("zsh"), "-f", "-c", script});
    INFO("zsh: " << r.all());
    CHECK(r.exit_code == 0);
    return r.out;
}

std::vector<std::string> zsh_complete(const TempDir& dir, const std::vector<std::string>& words) {
    return offered(zsh_output(dir, words));
}

std::string fish_output(const std::string& line) {
    const std::string script =
        "source " + q((completions_dir() / "pkitctl.fish").string()) + "; complete -C " + q(line);
    const auto r = run_command({program_path("fish"), "--no-config", "-c", script});
    INFO("fish: " << r.all());
    CHECK(r.exit_code == 0);
    return r.out;
}

std::vector<std::string> fish_complete(const std::string& line) {
    return offered(fish_output(line));
}

}  // namespace

TEST_CASE("completions: bash, zsh and fish offer a live service, signals, commands and --for") {
    TempDir dir;
    dir.service("webapp", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    const std::string ctl = PKITCTL_BIN;
    const std::string socket_eq = "--socket=" + pkitd.socket();

    SUBCASE("bash") {
        if (program_path("bash").empty()) {
            PKIT_SKIP("bash is not installed");
        }
        // bash splits "--socket=PATH" at "=" into three words.
        auto names = bash_complete({ctl, "--socket", "=", pkitd.socket(), "signal", ""});
        CHECK(offers(names, "webapp"));
        CHECK_FALSE(offers(names, "SIGHUP"));  // the service comes first
        auto signals =
            bash_complete({ctl, "--socket", "=", pkitd.socket(), "signal", "webapp", "SIGU"});
        CHECK(offers(signals, "SIGUSR1"));
        CHECK(offers(signals, "SIGUSR2"));
        CHECK_FALSE(offers(signals, "webapp"));
        CHECK(offers(bash_complete({ctl, "--socket", pkitd.socket(), "stop", "web"}), "webapp"));
        CHECK(offers(bash_complete({ctl, "--socket", pkitd.socket(), "signal", "webapp", "H"}),
                     "HUP"));
        auto commands = bash_complete({ctl, "s"});
        for (const char* c : {"status", "start", "stop", "signal", "shutdown"}) {
            CHECK(offers(commands, c));
        }
        auto fors = bash_complete({ctl, "wait", "--for", ""});
        CHECK(fors == std::vector<std::string>{"ready", "done", "stopped"});
        CHECK(offers(bash_complete({ctl, "logs", "--"}), "--follow"));
        CHECK(offers(bash_complete({ctl, "t"}), "top"));
        CHECK(offers(bash_complete({ctl, "status", "--"}), "--state"));
        CHECK(offers(bash_complete({ctl, "pa"}), "pause"));
        CHECK(offers(bash_complete({ctl, "re"}), "resume"));
        CHECK(offers(bash_complete({ctl, "--socket", pkitd.socket(), "pause", "web"}), "webapp"));
        CHECK(offers(bash_complete({ctl, "resume", "--"}), "--all"));
        CHECK(offers(bash_complete({ctl, "status", "--state", "pa"}), "paused"));
        CHECK(offers(bash_complete({ctl, "events", "--type", "res"}), "resumed"));
        auto reload = bash_complete({ctl, "reload", "--"});
        CHECK(offers(reload, "--dry-run"));
        CHECK(offers(reload, "--no-wait"));
    }
    SUBCASE("zsh") {
        if (program_path("zsh").empty()) {
            PKIT_SKIP("zsh is not installed (apt-get install zsh)");
        }
        auto names = zsh_complete(dir, {ctl, socket_eq, "signal", ""});
        CHECK(offers(names, "webapp"));
        CHECK_FALSE(offers(names, "SIGHUP"));
        auto signals = zsh_complete(dir, {ctl, socket_eq, "signal", "webapp", ""});
        CHECK(offers(signals, "SIGUSR1"));
        CHECK(offers(signals, "HUP"));
        CHECK(
            offers(zsh_complete(dir, {ctl, "--socket", pkitd.socket(), "explain", ""}), "webapp"));
        auto commands = zsh_complete(dir, {ctl, ""});
        CHECK(offers(commands, "status"));
        CHECK(offers(commands, "wait"));
        CHECK(zsh_complete(dir, {ctl, "wait", "--for", ""}) ==
              std::vector<std::string>{"ready", "done", "stopped"});
        // Commands and options come with their descriptions.
        CHECK(offers(commands, "top"));
        const std::string described = zsh_output(dir, {ctl, ""});
        CHECK(described.find("status\tstatus           -- show the services' state\n") !=
              std::string::npos);
        CHECK(
            zsh_output(dir, {ctl, "logs", "--"}).find("--since\t--since          -- only lines") !=
            std::string::npos);
        CHECK(offers(commands, "pause"));
        CHECK(offers(commands, "resume"));
        CHECK(offers(zsh_complete(dir, {ctl, "--socket", pkitd.socket(), "resume", ""}), "webapp"));
        CHECK(offers(zsh_complete(dir, {ctl, "status", "--state", ""}), "paused"));
        auto reload = zsh_complete(dir, {ctl, "reload", "--"});
        CHECK(offers(reload, "--dry-run"));
        CHECK(offers(reload, "--no-wait"));
    }
    SUBCASE("fish") {
        if (program_path("fish").empty()) {
            PKIT_SKIP("fish is not installed (apt-get install fish)");
        }
        auto names = fish_complete(ctl + " " + socket_eq + " signal ");
        CHECK(offers(names, "webapp"));
        CHECK_FALSE(offers(names, "SIGHUP"));
        auto signals = fish_complete(ctl + " " + socket_eq + " signal webapp SIGU");
        CHECK(offers(signals, "SIGUSR1"));
        CHECK(offers(fish_complete(ctl + " --socket " + pkitd.socket() + " status "), "webapp"));
        auto commands = fish_complete(ctl + " ");
        CHECK(offers(commands, "status"));
        CHECK(offers(commands, "wait"));
        CHECK(offers(commands, "top"));
        CHECK(fish_output(ctl + " ").find("status\tshow the services' state\n") !=
              std::string::npos);
        CHECK(fish_output(ctl + " status --").find("--state\tonly services in these states") !=
              std::string::npos);
        auto fors = fish_complete(ctl + " wait --for ");
        std::sort(fors.begin(), fors.end());
        CHECK(fors == std::vector<std::string>{"done", "ready", "stopped"});
        CHECK(offers(commands, "pause"));
        CHECK(offers(commands, "resume"));
        CHECK(offers(fish_complete(ctl + " --socket " + pkitd.socket() + " pause "), "webapp"));
        CHECK(offers(fish_complete(ctl + " status --state "), "paused"));
        auto reload = fish_complete(ctl + " reload --");
        CHECK(offers(reload, "--dry-run"));
        CHECK(offers(reload, "--no-wait"));
    }
    CHECK(pkitd.stop() == 0);
}
