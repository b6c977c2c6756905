// pkitctl top (SPEC §17) on a real terminal: tmux runs it in a detached session of a
// known size, and capture-pane reads what the screen shows. Sorting keys, a resize,
// and q giving the terminal back (the alternate screen left, the shell's screen as it
// was); without a terminal, one frame.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// A tmux server of the case's own (its socket in the case's temp dir), killed at the end.
class Tmux {
public:
    explicit Tmux(const TempDir& dir) : m_socket(dir.file("tmux.sock")) {}
    ~Tmux() { (void)run({"kill-server"}); }
    Tmux(const Tmux&) = delete;
    Tmux& operator=(const Tmux&) = delete;

    CommandResult run(std::vector<std::string> args) const {
        args.insert(args.begin(), {"/usr/bin/env", "tmux", "-S", m_socket});
        return run_command(args, 20s, {"TERM=xterm-256color"});
    }
    // The text the pane shows now.
    std::string screen() const { return run({"capture-pane", "-p", "-t", "top"}).out; }
    // Waits until the pane shows `text` (or, with `absent`, no longer shows it).
    std::string wait_screen(const std::string& text, bool absent = false) const {
        std::string seen;
        wait_for(
            [&] {
                seen = screen();
                return (seen.find(text) != std::string::npos) != absent;
            },
            10s, (absent ? "the screen to lose " : "the screen to show ") + text,
            [&] { return seen; });
        return seen;
    }

private:
    std::string m_socket;
};

}  // namespace

TEST_CASE("ctl top: sorts by key, fits a resized terminal, and q gives the terminal back") {
    if (!have_program("tmux")) {
        PKIT_SKIP("tmux is not installed: no terminal to run top in");
    }
    TempDir dir;
    dir.service("busy", sh_command("while :; do :; done"));
    dir.service("idle", sh_command("exec sleep 1000"));
    dir.service("a-service-whose-name-is-long-enough-to-be-cut-on-a-narrow-screen",
                sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "busy", state_is("running"), 5s, "busy runs");

    Tmux tmux(dir);
    // A shell first, with a line of its own on the screen, so that leaving the
    // alternate screen can be seen: that line is back.
    const std::string top = "'" + std::string(PKITCTL_BIN) + "' --socket '" + pkitd.socket() +
                            "' top --interval 200ms; echo top-exited-$?; sleep 1000";
    auto started = tmux.run({"new-session", "-d", "-s", "top", "-x", "120", "-y", "20", "/bin/sh",
                             "-c", "trap : INT; echo shell-before-top; " + top});
    REQUIRE_MESSAGE(started.exit_code == 0, started.all());

    std::string screen = tmux.wait_screen("sorted by CPU");
    CHECK(screen.find("shell-before-top") == std::string::npos);  // the alternate screen
    CHECK(screen.find("NAME") != std::string::npos);
    // The busy loop uses the most CPU: first below the titles once measured.
    wait_for(
        [&] {
            screen = tmux.screen();
            auto titles = screen.find("NAME");
            auto next = screen.find('\n', titles);
            return titles != std::string::npos && screen.compare(next + 1, 4, "busy") == 0;
        },
        10s, "busy first by CPU", [&] { return screen; });

    CHECK(tmux.run({"send-keys", "-t", "top", "n"}).exit_code == 0);
    screen = tmux.wait_screen("sorted by name");
    CHECK(screen.find("a-service-whose") < screen.find("busy"));
    CHECK(tmux.run({"send-keys", "-t", "top", "m"}).exit_code == 0);
    tmux.wait_screen("sorted by memory");

    CHECK(tmux.run({"resize-window", "-t", "top", "-x", "60", "-y", "20"}).exit_code == 0);
    wait_for(
        [&] {
            screen = tmux.screen();
            return screen.find("\u2026") != std::string::npos && widest_line(screen) <= 60;
        },
        10s, "the frame redrawn for 60 columns, the long name cut", [&] { return screen; });

    CHECK(tmux.run({"send-keys", "-t", "top", "q"}).exit_code == 0);
    screen = tmux.wait_screen("top-exited-0");
    CHECK(screen.find("shell-before-top") != std::string::npos);  // the shell's screen is back
    CHECK(screen.find("sorted by") == std::string::npos);
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl top: Ctrl-C restores the terminal too") {
    if (!have_program("tmux")) {
        PKIT_SKIP("tmux is not installed: no terminal to run top in");
    }
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Tmux tmux(dir);
    const std::string top = "'" + std::string(PKITCTL_BIN) + "' --socket '" + pkitd.socket() +
                            "' top; echo top-exited-$?; stty -a | tr ' ' '\\n' | grep -x echo; "
                            "sleep 1000";
    REQUIRE(tmux.run({"new-session", "-d", "-s", "top", "-x", "100", "-y", "20", "/bin/sh", "-c",
                      "trap : INT; echo shell-before-top; " + top})
                .exit_code == 0);
    tmux.wait_screen("sorted by CPU");
    CHECK(tmux.run({"send-keys", "-t", "top", "C-c"}).exit_code == 0);
    std::string screen = tmux.wait_screen("top-exited-");
    CHECK(screen.find("shell-before-top") != std::string::npos);
    CHECK(screen.find("sorted by") == std::string::npos);
    // Echo is on again (stty prints "echo", not "-echo").
    tmux.wait_screen("\necho\n");
    CHECK(pkitd.stop() == 0);
}

TEST_CASE("ctl top: without a terminal, one frame and exit 0") {
    TempDir dir;
    dir.service("web", sh_command("exec sleep 1000"));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "web runs");
    auto frame = run_ctl({"--socket", pkitd.socket(), "top"});
    INFO(frame.all());
    CHECK(frame.exit_code == 0);
    CHECK(frame.out.starts_with("1 service: 1 running"));
    CHECK(frame.out.find("\nNAME") != std::string::npos);
    CHECK(frame.out.find("\nweb ") != std::string::npos);
    CHECK(frame.out.find("\033") == std::string::npos);  // plain text, no screen control
    auto bad = run_ctl({"--socket", pkitd.socket(), "top", "--interval", "fast"});
    CHECK(bad.exit_code == 2);
    CHECK(pkitd.stop() == 0);
}
