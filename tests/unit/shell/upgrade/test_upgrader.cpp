// The Upgrader (upgrade/upgrader.hpp) against a fake UpgradeHost and a fake next pkitd
// (a shell script answering --upgrade-check and the trial as the real one does): the
// refusals before anything runs, each failed step answering the request and changing
// nothing (the state never asked for), the configuration on disk compared with the one
// running, the trial given the very state the hand-over would write, the busy states
// asked again before the exec, and a failed exec leaving pkitd as it was. The check's
// and the trial's children are claimed as the reaper hands them over.

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "daemon/shell/upgrade/upgrader.hpp"
#include "tests/unit/core/fake.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// What the host was asked, and what it answers.
class FakeUpgradeHost final : public upgrade::UpgradeHost {
public:
    FakeUpgradeHost()
        : disk(core::test::tree({core::test::spec("web")})), m_sup(disk, [] { return 0.5; }) {}

    const core::Supervisor& supervisor() const override { return m_sup; }
    void log(std::string_view level, const std::string& message) override {
        logged.push_back(std::string(level) + ": " + message);
    }
    std::optional<std::string> busy_for_upgrade() override {
        ++busy_asked;
        return busy;
    }
    std::string upgrade_state(int format, std::vector<int>& kept) override {
        state_formats.push_back(format);
        kept.insert(kept.end(), kept_fds.begin(), kept_fds.end());
        return state;
    }
    std::expected<void, std::string> read_config(BackgroundLoad::Done done) override {
        read = std::move(done);
        return {};
    }
    std::vector<upgrade::ScaledFact> scaled_facts() const override { return {}; }
    void flush_signals() override { ++signals_flushed; }
    void flush_output() override { ++output_flushed; }

    // The read of the configuration on disk, answered as the reader would at a turn.
    void answer_read() {
        if (read) {
            BackgroundLoad::Done done = std::move(read);
            read = nullptr;
            done(disk_valid ? config::LoadResult(disk)
                            : std::unexpected(std::vector<config::Diagnostic>{{"x.toml"}}));
        }
    }

    config::Tree disk;  // what the files say; the Supervisor runs it as made
    bool disk_valid = true;
    std::optional<std::string> busy;
    std::string state = "{\"state\": \"as the hand-over writes it\"}\n";
    std::vector<int> kept_fds;
    BackgroundLoad::Done read;
    std::vector<std::string> logged;
    std::vector<int> state_formats;
    int busy_asked = 0;
    int signals_flushed = 0;
    int output_flushed = 0;

private:
    core::Supervisor m_sup;
};

// A next pkitd: `--upgrade-check` prints its version and `formats` and exits
// `check_exit`; the trial copies its descriptor 3 to DIR/trial-state, says `trial_says`
// and exits `trial_exit` (with `vanish`, removing itself first, so that the exec fails).
// Anything else (the exec itself) exits 99: the test process would end with it.
std::string fake_pkitd(TempDir& dir, const std::string& formats, int check_exit = 0,
                       int trial_exit = 0, const std::string& trial_says = "",
                       bool vanish = false) {
    return dir.write("pkitd-next",
                     "#!/bin/sh\n"
                     "if [ \"$#\" = 1 ] && [ \"$1\" = --upgrade-check ]; then\n"
                     "  printf '" +
                         formats +
                         "'\n"
                         "  exit " +
                         std::to_string(check_exit) +
                         "\n"
                         "fi\n"
                         "if [ \"$1\" = --upgrade-check ] && [ \"$2\" = --state ]; then\n"
                         "  cat <&3 > " +
                         dir.path() + "/trial-state\n" + (vanish ? "  rm -f \"$0\"\n" : "") +
                         "  printf '" + trial_says +
                         "'\n"
                         "  exit " +
                         std::to_string(trial_exit) +
                         "\n"
                         "fi\n"
                         "exit 99\n",
                     0755);
}

using UpgradeAnswers = std::vector<DaemonPort::UpgradeResult>;

// Runs the loop as pkitd would around the Upgrader: each child reaped is offered to it
// (all must be its own), the host's read answered, until `done()`.
bool drive_upgrade(TestLoop& loop, upgrade::Upgrader& upgrader, FakeUpgradeHost& host,
                   const std::function<bool()>& done) {
    return loop.run_until(
        [&] {
            int status = 0;
            for (pid_t pid; (pid = ::waitpid(-1, &status, WNOHANG)) > 0;) {
                ChildExit exit{pid, status, std::nullopt, nullptr, decode_wait_status(status)};
                CHECK(upgrader.on_child_exit(exit));
            }
            host.answer_read();
            return done();
        },
        20s);
}

upgrade::ExecArgs exec_args(const std::string& binary) {
    return upgrade::ExecArgs{binary, "/etc/pkit", "/run/pkit.sock", "text", {}};
}

// What the trial wrote.
std::string trial_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

bool has_log(const std::vector<std::string>& lines, const std::string& part) {
    return std::ranges::any_of(lines, [&](const std::string& l) { return l.find(part) != l.npos; });
}

}  // namespace

TEST_CASE("an upgrade is refused before anything runs: busy, no such binary, one under way") {
    TempDir dir;
    TestLoop loop;
    UpgradeAnswers answers;
    {
        FakeUpgradeHost host;
        upgrade::Upgrader upgrader(loop.get(), host, exec_args("/usr/sbin/pkitd"));
        auto ask = [&](std::string binary) {
            answers.clear();
            upgrader.upgrade(std::move(binary),
                             [&](const DaemonPort::UpgradeResult& r) { answers.push_back(r); });
            REQUIRE(answers.size() == 1);  // answered at once
            REQUIRE_FALSE(answers[0]);
            return answers[0].error();
        };
        CHECK(ask("pkitd") == "the binary must be an absolute path: \"pkitd\"");
        CHECK(ask(dir.path() + "/none") == dir.path() + "/none: No such file or directory");
        const std::string plain = dir.write("plain", "", 0644);
        CHECK(ask(plain) == plain + " is not an executable file");
        CHECK(ask(dir.path()) == dir.path() + " is not an executable file");
        host.busy = "a reload is in progress";
        CHECK(ask(fake_pkitd(dir, "pkitd 9.9.9\\nstate-format 2 3\\n")) ==
              "a reload is in progress; nothing changed");
        CHECK(has_log(host.logged, "error: upgrade to " + plain + " refused: "));

        // One under way: a second is refused, the first goes on.
        host.busy.reset();
        UpgradeAnswers first;
        upgrader.upgrade(fake_pkitd(dir, "pkitd 9.9.9\\nstate-format 9\\n"),
                         [&](const DaemonPort::UpgradeResult& r) { first.push_back(r); });
        CHECK(first.empty());
        CHECK(ask("") == "an upgrade is in progress; nothing changed");
        REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !first.empty(); }));
        CHECK(host.state_formats.empty());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("a check that fails, names no pkitd or no common format ends the upgrade") {
    TempDir dir;
    TestLoop loop;
    struct Case {
        std::string output;
        int exit;
        std::string error;
    };
    const std::vector<Case> cases{
        {"pkitd 9.9.9\\nstate-format 2 3\\n", 1, " --upgrade-check exited 1"},
        {"hello\\n", 0, " --upgrade-check did not say which pkitd it is"},
        {"pkitd 9.9.9\\nstate-format 1 99\\n", 0,
         " (pkitd 9.9.9) does not read state format 4 or 3 or 2"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.error);
        UpgradeAnswers answers;
        FakeUpgradeHost host;
        const std::string binary = fake_pkitd(dir, c.output, c.exit);
        {
            upgrade::Upgrader upgrader(loop.get(), host, exec_args(binary));
            upgrader.upgrade("", [&](const DaemonPort::UpgradeResult& r) { answers.push_back(r); });
            REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !answers.empty(); }));
        }
        REQUIRE_FALSE(answers[0]);
        CHECK(answers[0].error() == binary + c.error);
        CHECK(has_log(host.logged, "error: upgrade to " + binary + " failed: " + binary + c.error +
                                       "; nothing changed"));
        CHECK(host.state_formats.empty());  // nothing written, nothing handed over
        CHECK_FALSE(host.read);
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("the configuration on disk must be the one running") {
    TempDir dir;
    TestLoop loop;
    for (bool valid : {true, false}) {
        UpgradeAnswers answers;
        FakeUpgradeHost host;
        host.disk_valid = valid;
        host.disk.services[0].command = {"/bin/true"};  // edited since the last reload
        {
            upgrade::Upgrader upgrader(
                loop.get(), host, exec_args(fake_pkitd(dir, "pkitd 9.9.9\\nstate-format 2 3\\n")));
            upgrader.upgrade("", [&](const DaemonPort::UpgradeResult& r) { answers.push_back(r); });
            REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !answers.empty(); }));
        }
        REQUIRE_FALSE(answers[0]);
        CHECK(answers[0].error() == (valid
                                         ? "the configuration on disk differs from the one running "
                                           "(services/web.toml): reload first, then upgrade"
                                         : "the configuration in /etc/pkit is not valid now"));
        CHECK(host.state_formats.empty());
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("the trial reads the state the hand-over writes; busy again before the exec, it stops") {
    TempDir dir;
    TestLoop loop;
    {
        // The trial passes; by the exec a reload has begun: nothing is handed over.
        UpgradeAnswers answers;
        FakeUpgradeHost host;
        upgrade::Upgrader upgrader(
            loop.get(), host, exec_args(fake_pkitd(dir, "pkitd 9.9.9\\nstate-format 1 2 3\\n")));
        upgrader.upgrade("", [&](const DaemonPort::UpgradeResult& r) { answers.push_back(r); });
        REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !host.state_formats.empty(); }));
        host.busy = "a reload is in progress";
        REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !answers.empty(); }));
        CHECK(trial_text(dir.path() + "/trial-state") == host.state);
        CHECK(host.state_formats == std::vector<int>{3});  // the trial's state only
        CHECK(host.signals_flushed == 1);
        CHECK(host.output_flushed == 0);
        REQUIRE_FALSE(answers[0]);
        CHECK(answers[0].error() == "a reload is in progress");
    }
    {
        // The trial fails: its words are in the answer.
        UpgradeAnswers answers;
        FakeUpgradeHost host;
        const std::string binary =
            fake_pkitd(dir, "pkitd 9.9.9\\nstate-format 3\\n", 0, 2, "unknown field x\\n");
        upgrade::Upgrader upgrader(loop.get(), host, exec_args(binary));
        upgrader.upgrade("", [&](const DaemonPort::UpgradeResult& r) { answers.push_back(r); });
        REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !answers.empty(); }));
        REQUIRE_FALSE(answers[0]);
        CHECK(answers[0].error() == binary +
                                        " cannot resume this pkitd's state: its trial exited 2: "
                                        "unknown field x");
        CHECK(host.signals_flushed == 0);
    }
    {
        // A next pkitd that reads no format with clients has no trial: the answer comes
        // before the exec, which is abandoned (only logged) when busy by then.
        UpgradeAnswers answers;
        FakeUpgradeHost host;
        upgrade::Upgrader upgrader(loop.get(), host,
                                   exec_args(fake_pkitd(dir, "pkitd 8.0.0\\nstate-format 1 2\\n")));
        upgrader.upgrade("", [&](const DaemonPort::UpgradeResult& r) {
            answers.push_back(r);
            host.busy = "the run of web is ending";
        });
        REQUIRE(
            drive_upgrade(loop, upgrader, host, [&] { return has_log(host.logged, "abandoned"); }));
        REQUIRE(answers.size() == 1);
        REQUIRE(answers[0]);
        CHECK(answers[0]->second == "8.0.0");
        CHECK(host.state_formats.empty());
        CHECK(has_log(host.logged, "error: upgrade to " + dir.path() +
                                       "/pkitd-next abandoned: the run of web is ending; "
                                       "nothing changed"));
    }
    CHECK(loop.close() == 0);
}

TEST_CASE("an exec that fails leaves pkitd as it was, its descriptors close-on-exec again") {
    TempDir dir;
    TestLoop loop;
    UpgradeAnswers answers;
    int kept[2];
    REQUIRE(::pipe2(kept, O_CLOEXEC) == 0);
    {
        FakeUpgradeHost host;
        host.kept_fds = {kept[0]};
        // The trial removes the binary: the exec that follows fails.
        upgrade::Upgrader upgrader(
            loop.get(), host,
            exec_args(fake_pkitd(dir, "pkitd 9.9.9\\nstate-format 3\\n", 0, 0, "", true)));
        upgrader.upgrade("", [&](const DaemonPort::UpgradeResult& r) { answers.push_back(r); });
        REQUIRE(drive_upgrade(loop, upgrader, host, [&] { return !answers.empty(); }));
        REQUIRE_FALSE(answers[0]);
        CHECK(answers[0].error() == "exec: No such file or directory");
        CHECK(host.state_formats == std::vector<int>{3, 3});  // the trial's, the exec's
        CHECK(host.signals_flushed == 1);
        CHECK(host.output_flushed == 1);  // written out before the exec
        CHECK((::fcntl(kept[0], F_GETFD) & FD_CLOEXEC) != 0);
    }
    ::close(kept[0]);
    ::close(kept[1]);
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
