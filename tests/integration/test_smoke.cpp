// The quick start (`make run`): pkitd on the repository's examples/ runs until SIGINT
// and exits 0.

#include <signal.h>

#include "tests/integration/harness.hpp"

using namespace pkit::itest;

namespace {

// The source tree, from this file's path (CMake passes absolute source paths).
fs::path source_dir() {
    return fs::path(__FILE__).parent_path().parent_path().parent_path();
}

}  // namespace

TEST_CASE("pkitd on the bundled examples runs until SIGINT and exits 0") {
    const fs::path examples = source_dir() / "examples";
    if (!fs::is_directory(examples)) {
        PKIT_SKIP("no examples/ beside " << __FILE__);
    }
    const auto check = run_pkitd({"--check", "--config", examples.string()});
    REQUIRE_MESSAGE(check.exit_code == 0, "the examples do not check clean:\n" << check.all());

    TempDir dir;
    Daemon pkitd(dir, {.config_dir = examples.string()});
    pkitd.wait_ready();
    Client client = pkitd.client();
    json reply = client.command("status");
    REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
    CHECK(reply["result"]["daemon"]["state"] == "running");
    for (json s : reply["result"]["services"]) {
        CHECK_MESSAGE(s["state"] != "failed", s.dump());
    }

    pkitd.signal(SIGINT);
    CHECK(pkitd.wait_exit(20s) == 0);
    const auto left = marker_processes(pkitd.marker());
    CHECK_MESSAGE(left.empty(), "left behind:" << describe(left));
}
