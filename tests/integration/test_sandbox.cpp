// [security] (SPEC §19), applied for real as root and read from inside the run: its
// own /proc/self/status, what it can write, its /tmp, its network devices, what it can
// read; and a protection that cannot be applied fails the launch with `sandbox`.

#include <unistd.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The value of `key` in the status lines the run printed ("NoNewPrivs:\t1" → "1").
std::string field(const std::vector<std::string>& lines, const std::string& key) {
    for (const std::string& line : lines) {
        if (line.rfind(key + ":", 0) == 0) {
            std::string value = line.substr(key.size() + 1);
            value.erase(0, value.find_first_not_of(" \t"));
            return value;
        }
    }
    return "(no " + key + ")";
}

const std::string k_caps_script =
    "grep -E '^(NoNewPrivs|CapInh|CapPrm|CapEff|CapBnd|CapAmb):' /proc/self/status";

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const std::string& line : lines) {
        out += line + "\n";
    }
    return out;
}

bool contains(const std::vector<std::string>& lines, const std::string& text) {
    return std::ranges::any_of(lines, [&](const std::string& l) { return l.find(text) != l.npos; });
}

}  // namespace

TEST_CASE("no_new_privileges and capabilities, as root: NoNewPrivs 1, the bounding set reduced") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    SUBCASE("without [security] nothing is reduced") {
        const auto lines = output_of(dir, sh_command(k_caps_script));
        CHECK(field(lines, "NoNewPrivs") == "0");
        CHECK(field(lines, "CapBnd") != "0000000000000400");
        CHECK(field(lines, "CapAmb") == "0000000000000000");
    }
    SUBCASE("with them") {
        const auto lines = output_of(dir, sh_command(k_caps_script) +
                                              "[security]\nno_new_privileges = true\n"
                                              "capabilities = [\"CAP_NET_BIND_SERVICE\"]\n");
        CHECK(field(lines, "NoNewPrivs") == "1");
        CHECK(field(lines, "CapBnd") == "0000000000000400");
        CHECK(field(lines, "CapEff") == "0000000000000400");
        // Root needs no ambient set: its capabilities come from the bounding set at exec.
        CHECK(field(lines, "CapAmb") == "0000000000000000");
    }
    SUBCASE("capabilities = [] drops every one") {
        const auto lines =
            output_of(dir, sh_command(k_caps_script) + "[security]\ncapabilities = []\n");
        CHECK(field(lines, "CapBnd") == "0000000000000000");
        CHECK(field(lines, "CapEff") == "0000000000000000");
    }
}

TEST_CASE("capabilities for a user other than root are ambient: nobody binds port 80") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    // In a network namespace of its own port 80 is always free; the bind needs the
    // loopback interface up (127.0.0.1 is assigned when it comes up).
    const std::string script =
        k_caps_script +
        "; id -u; /usr/bin/perl -MSocket -e 'socket(S, PF_INET, SOCK_STREAM, 0) or die; "
        "bind(S, sockaddr_in(80, inet_aton(\"127.0.0.1\"))) or die \"bind: $$!\\n\"; "
        "print \"bound 80\\n\"' 2>&1; true";
    SUBCASE("with CAP_NET_BIND_SERVICE") {
        const auto lines = output_of(dir, sh_command(script) +
                                              "user = \"nobody\"\n[security]\n"
                                              "capabilities = [\"net_bind_service\"]\n"
                                              "private_network = true\n");
        CHECK(field(lines, "CapAmb") == "0000000000000400");
        CHECK(field(lines, "CapEff") == "0000000000000400");
        CHECK(field(lines, "CapBnd") == "0000000000000400");
        CHECK(contains(lines, "65534"));
        CHECK_MESSAGE(contains(lines, "bound 80"), "output: " << joined(lines));
    }
    SUBCASE("without it the bind is refused") {
        const auto lines = output_of(dir, sh_command(script) +
                                              "user = \"nobody\"\n[security]\n"
                                              "private_network = true\n");
        CHECK(field(lines, "CapAmb") == "0000000000000000");
        CHECK_FALSE(contains(lines, "bound 80"));
        CHECK(contains(lines, "bind: Permission denied"));
    }
}

TEST_CASE("protect_system strict: /etc is read-only, a writable_paths entry is not") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    const std::string data = dir.file("data");
    fs::create_directories(data);
    const std::string script = "touch /etc/pkit-itest-sandbox 2>&1; echo etc $$?; touch " + data +
                               "/written && echo data ok; touch " + dir.file("beside") +
                               " 2>&1; echo beside $$?; echo x > /dev/null && echo dev ok";
    SUBCASE("strict") {
        const auto lines = output_of(dir, sh_command(script) +
                                              "[security]\nprotect_system = \"strict\"\n"
                                              "writable_paths = [" +
                                              toml_str(data) + "]\n");
        CHECK_MESSAGE(contains(lines, "Read-only file system"), joined(lines));
        CHECK(contains(lines, "etc 1"));
        CHECK(contains(lines, "data ok"));
        CHECK(fs::exists(data + "/written"));
        CHECK(contains(lines, "beside 1"));
        CHECK_FALSE(fs::exists(dir.file("beside")));
        CHECK(contains(lines, "dev ok"));
    }
    SUBCASE("full: /etc read-only, the rest as it was") {
        const auto lines =
            output_of(dir, sh_command(script) + "[security]\nprotect_system = \"full\"\n");
        CHECK(contains(lines, "etc 1"));
        CHECK(contains(lines, "data ok"));
        CHECK(contains(lines, "beside 0"));
    }
    CHECK_FALSE(fs::exists("/etc/pkit-itest-sandbox"));
    std::error_code ignored;
    fs::remove("/etc/pkit-itest-sandbox", ignored);  // only there when the test failed
}

TEST_CASE("read_only_paths and inaccessible_paths") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    const std::string ro = dir.file("ro");
    const std::string hidden = dir.file("hidden");
    const std::string secret_file = dir.file("secret.txt");
    fs::create_directories(ro);
    fs::create_directories(hidden);
    write_file(hidden + "/secret", "hidden words\n");
    write_file(secret_file, "file words\n");
    const std::string script = "touch " + ro + "/x 2>&1; echo ro $$?; cat " + hidden +
                               "/secret 2>&1; ls -A " + hidden + "; cat " + secret_file +
                               " 2>&1; echo end";
    const auto lines = output_of(dir, sh_command(script) + "[security]\nread_only_paths = [" +
                                          toml_str(ro) + "]\ninaccessible_paths = [" +
                                          toml_str(hidden) + ", " + toml_str(secret_file) + "]\n");
    CHECK_MESSAGE(contains(lines, "ro 1"), joined(lines));
    CHECK_FALSE(contains(lines, "hidden words"));
    CHECK_FALSE(contains(lines, "file words"));
    CHECK(contains(lines, "end"));
    // Outside the run nothing changed.
    CHECK(read_file(hidden + "/secret") == "hidden words\n");
    CHECK(fs::is_directory(ro));
}

TEST_CASE("private_tmp: the run's /tmp and /var/tmp are its own and empty") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    const std::string name = "pkit-itest-private-" + std::to_string(getpid());
    const std::string outside = "/tmp/" + name + "-outside";
    write_file(outside, "x");
    const std::string script = "ls -A /tmp | wc -l; ls -A /var/tmp | wc -l; echo made > /tmp/" +
                               name + " && echo made > /var/tmp/" + name + " && cat /tmp/" + name +
                               "; test -e " + outside + " && echo sees outside; true";
    // cwd: pkitd's own (the build dir) may be under /tmp or /var/tmp, hidden from the run.
    const auto lines =
        output_of(dir, sh_command(script) + "cwd = \"/\"\n[security]\nprivate_tmp = true\n");
    fs::remove(outside);
    REQUIRE_MESSAGE(lines.size() >= 3, joined(lines));
    CHECK(lines[0] == "0");
    CHECK(lines[1] == "0");
    CHECK(lines[2] == "made");
    CHECK_FALSE(contains(lines, "sees outside"));
    CHECK_FALSE(fs::exists("/tmp/" + name));
    CHECK_FALSE(fs::exists("/var/tmp/" + name));
}

TEST_CASE("private_network: only lo") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    const std::string script = "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '";
    const auto lines = output_of(dir, sh_command(script) + "[security]\nprivate_network = true\n");
    CHECK(lines == std::vector<std::string>{"lo"});
    const auto host = output_of(dir, sh_command(script));
    CHECK(host.size() > 1);
}

TEST_CASE("a protection that cannot be applied fails the launch with `sandbox`") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    const std::string missing = dir.file("no-such-dir");
    dir.service("svc",
                "command = [\"/bin/true\"]\n[security]\nprotect_system = \"strict\"\n"
                "writable_paths = [" +
                    toml_str(missing) + "]\n[give_up_when]\nlaunch_errors = [\"sandbox\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json s = wait_status(client, "svc", state_is("failed"), 10s, "the launch fails and gives up");
    CHECK(s["stopped"] == "gave_up");
    CHECK(s["run"] == 1);
    CHECK(s["pid"].is_null());
    CHECK_MESSAGE(s["last_launch_error"] ==
                      "sandbox: writable_paths " + missing + ": No such file or directory",
                  s["last_launch_error"].dump());
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("status security and pkitctl show list the protections in effect") {
    REQUIRE_MESSAGE(is_root(), "the sandbox is tested as root");
    TempDir dir;
    dir.service("web",
                "command = [\"/bin/sleep\", \"1000\"]\n[security]\n"
                "no_new_privileges = true\ncapabilities = [\"net_bind_service\"]\n"
                "protect_system = \"full\"\nprivate_network = true\n");
    dir.service("plain", "command = [\"/bin/sleep\", \"1000\"]\n");
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    json web = wait_running(client, "web");
    CHECK(web["security"] == json::array({"no_new_privileges", "capabilities CAP_NET_BIND_SERVICE",
                                          "protect_system full", "private_network"}));
    CHECK(wait_running(client, "plain")["security"].is_null());
    CommandResult shown = ctl(pkitd, {"show", "web"});
    CHECK(shown.exit_code == 0);
    CHECK_MESSAGE(shown.out.find("no_new_privileges; capabilities CAP_NET_BIND_SERVICE; "
                                 "protect_system full; private_network") != std::string::npos,
                  shown.out);
    CommandResult plain = ctl(pkitd, {"show", "plain"});
    CHECK(plain.out.find("no_new_privileges") == std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("pkitd --check warns at a [security] path missing here, and the file still loads") {
    TempDir dir;
    const std::string missing = dir.file("no-such-dir");
    dir.service("web",
                "command = [\"/bin/true\"]\n[security]\nno_new_privileges = true\n"
                "writable_paths = [" +
                    toml_str(missing) + "]\n");
    CommandResult check = run_pkitd({"--check", "--config", dir.str()});
    CHECK(check.exit_code == 0);
    CHECK_MESSAGE(
        check.all().find(dir.file("services/web.toml") +
                         ":4:1: warning: security.writable_paths: not applied here: " + missing +
                         " does not exist; every launch fails with launch "
                         "error sandbox") != std::string::npos,
        check.all());
}
