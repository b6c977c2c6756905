// `pkitctl logs -f` across runs (SPEC §10): it follows a restarting service into each
// next run with one marker line between runs, and ends by itself once the service
// will not run again.

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

TEST_CASE("logs -f prints each run with a marker between runs and ends once the service failed") {
    TempDir dir;
    const std::string count = dir.file("count");
    // Run 1 prints, then waits at the gate (so the follower is attached before any crash);
    // every run exits 1; two restarts allowed: three crashes, then failed.
    dir.service("web", sh_command("n=$(cat " + count +
                                  " 2>/dev/null || echo 0); n=$((n+1)); "
                                  "echo $n > " +
                                  count +
                                  "; echo \"hello from run $n\"; "
                                  "if [ $n -eq 1 ]; then " +
                                  gate(dir) + "fi; exit 1") +
                           restart_table("on_crash", "200ms", 1.0, 2));
    Daemon pkitd(dir);
    pkitd.wait_ready();
    Client client = pkitd.client();
    wait_status(client, "web", state_is("running"), 5s, "run 1 runs");

    BackgroundCtl follower({"--socket", pkitd.socket(), "logs", "-f", "web"}, dir.file("logs.out"),
                           dir.file("logs.err"));
    // The first line comes in the reply, so once it is printed the stream is attached.
    wait_for(
        [&] {
            return read_file(dir.file("logs.out")).find("hello from run 1") != std::string::npos;
        },
        10s, "pkitctl prints run 1's line",
        [&] { return read_file(dir.file("logs.out")) + read_file(dir.file("logs.err")); });
    open_gate(dir);

    auto exit_status = follower.wait_exit(20s);
    INFO("stdout:\n" << read_file(dir.file("logs.out")));
    INFO("stderr:\n" << read_file(dir.file("logs.err")));
    REQUIRE_MESSAGE(exit_status.has_value(), "logs -f did not end once web failed");
    CHECK(*exit_status == 0);
    CHECK(read_file(dir.file("logs.out")) ==
          "hello from run 1\n"
          "--- run 2 (restart 1) ---\n"
          "hello from run 2\n"
          "--- run 3 (restart 2) ---\n"
          "hello from run 3\n");
    CHECK(status(client, "web")["state"] == "failed");

    SUBCASE("and logs -f of a service that already failed ends at once") {
        const auto result = run_ctl({"--socket", pkitd.socket(), "logs", "-f", "web"}, 10s);
        CHECK(result.exit_code == 0);
        CHECK(result.out == "hello from run 3\n");
    }
    CHECK(pkitd.stop() == 0);
}
