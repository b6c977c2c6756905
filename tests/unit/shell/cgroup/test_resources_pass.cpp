// ResourcesPass on a real loop and libuv's pool: the result reaches the loop on a later
// turn, never in the caller's, and counts every process of a group whichever share its
// pid falls to; an abandoned pass never calls back, and hands its items back to libuv.

#include "daemon/shell/cgroup/resources_pass.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

TEST_CASE("ResourcesPass: the result comes on a later turn, every process of a group counted") {
    MixedGroup group;
    TestLoop loop;
    int calls = 0;
    std::vector<proto::Resources> got;
    std::optional<OwnProcess> own;
    ResourcesPass* pass = ResourcesPass::start(
        loop.get(), {group.pgid(), 0, 999999999}, {}, true,
        [&](std::vector<proto::Resources> resources, std::optional<OwnProcess> own_process) {
            ++calls;
            got = std::move(resources);
            own = own_process;
        });
    REQUIRE(pass != nullptr);
    CHECK(calls == 0);  // never in the caller's turn
    REQUIRE(loop.run_until([&] { return calls > 0; }));
    CHECK(calls == 1);
    REQUIRE(got.size() == 3);
    CHECK(got[0].processes == static_cast<int>(group.size()));
    CHECK(got[0].rss_bytes > 0);
    CHECK(got[1] == proto::Resources{});
    CHECK(got[2] == proto::Resources{});
    REQUIRE(own);
    CHECK(own->open_fds > 0);
    CHECK(loop.close() == 0);
}

TEST_CASE("ResourcesPass: an abandoned pass never calls back") {
    MixedGroup group;
    TestLoop loop;
    bool called = false;
    ResourcesPass* pass = ResourcesPass::start(
        loop.get(), {group.pgid()}, {}, false,
        [&](std::vector<proto::Resources>, std::optional<OwnProcess>) { called = true; });
    REQUIRE(pass != nullptr);
    pass->abandon();
    uv_run(loop.get(), UV_RUN_DEFAULT);  // the items, run or cancelled, come back
    CHECK_FALSE(called);
    CHECK(loop.close() == 0);
}

}  // namespace pkit::shell::test
