// plan_sandbox() (SPEC §19): the steps the child takes for each [security] key, in the
// order that makes the deeper path win, with the label each step's failure names; and
// sandbox_words(), what status and `pkitctl show` list.

#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "daemon/shell/launch/sandbox_plan.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

// One step as words: "capture /dev (optional) [protect_system "strict": /dev]".
std::vector<std::string> steps_of(const ChildSandbox& plan,
                                  const std::vector<std::string>& labels) {
    std::vector<std::string> out;
    for (const MountStep& step : plan.steps) {
        std::string op;
        switch (step.op) {
            case MountOp::capture:
                op = "capture";
                break;
            case MountOp::readonly_root:
                op = "readonly_root";
                break;
            case MountOp::readonly:
                op = "readonly";
                break;
            case MountOp::restore:
                op = "restore";
                break;
            case MountOp::tmpfs:
                op = "tmpfs";
                break;
            case MountOp::inaccessible:
                op = "inaccessible";
                break;
        }
        std::string words = op + " " + step.path;
        if (step.slot >= 0) {
            words += " #" + std::to_string(step.slot);
        }
        if (step.optional) {
            words += " (optional)";
        }
        words += " [" + labels.at(static_cast<std::size_t>(step.label)) + "]";
        out.push_back(std::move(words));
    }
    return out;
}

}  // namespace

TEST_CASE("plan_sandbox: strict keeps the API file systems and writable_paths, then the rest") {
    config::SecuritySpec s;
    s.protect_system = config::ProtectSystem::strict;
    s.writable_paths = {"/srv/data"};
    s.read_only_paths = {"/srv"};
    s.private_tmp = true;
    s.inaccessible_paths = {"/root"};
    SandboxStore store;
    std::vector<std::string> labels;
    ChildSandbox plan = plan_sandbox(s, 0, true, store, labels);
    CHECK(plan.mount_namespace);
    CHECK(labels.at(static_cast<std::size_t>(plan.namespace_label)) == "mount namespace");
    CHECK_FALSE(plan.private_network);
    CHECK_FALSE(plan.set_capabilities);
    CHECK_FALSE(plan.no_new_privileges);
    CHECK(plan.chdir_to == nullptr);  // the service has a cwd of its own
    // Every path kept writable is captured before "/" goes read-only, then mounted back
    // parents first: /srv read-only before /srv/data writable again, so the deeper wins.
    CHECK(steps_of(plan, labels) ==
          std::vector<std::string>{
              "capture /dev #0 (optional) [protect_system \"strict\": /dev]",
              "capture /proc #1 (optional) [protect_system \"strict\": /proc]",
              "capture /run #2 (optional) [protect_system \"strict\": /run]",
              "capture /srv/data #3 [writable_paths /srv/data]",
              "capture /sys #4 (optional) [protect_system \"strict\": /sys]",
              "readonly_root / [protect_system \"strict\": /]",
              "restore /dev #0 (optional) [protect_system \"strict\": /dev]",
              "restore /proc #1 (optional) [protect_system \"strict\": /proc]",
              "restore /run #2 (optional) [protect_system \"strict\": /run]",
              "readonly /srv [read_only_paths /srv]",
              "restore /srv/data #3 [writable_paths /srv/data]",
              "restore /sys #4 (optional) [protect_system \"strict\": /sys]",
              "tmpfs /tmp [private_tmp: /tmp]",
              "tmpfs /var/tmp (optional) [private_tmp: /var/tmp]",
              "inaccessible /root [inaccessible_paths /root]",
          });
    // A slot for each capture, none filled yet; the steps point into the store.
    REQUIRE(store.fds.size() == 5);
    CHECK(plan.fds == store.fds.data());
    CHECK(std::ranges::all_of(store.fds, [](int fd) { return fd == -1; }));
}

TEST_CASE("plan_sandbox: full makes /usr, /boot, /efi and /etc read-only, each if it exists") {
    config::SecuritySpec s;
    s.protect_system = config::ProtectSystem::full;
    SandboxStore store;
    std::vector<std::string> labels;
    ChildSandbox plan = plan_sandbox(s, 0, true, store, labels);
    CHECK(steps_of(plan, labels) ==
          std::vector<std::string>{
              "readonly /boot (optional) [protect_system \"full\": /boot]",
              "readonly /efi (optional) [protect_system \"full\": /efi]",
              "readonly /etc (optional) [protect_system \"full\": /etc]",
              "readonly /usr (optional) [protect_system \"full\": /usr]",
          });
    CHECK(store.fds.empty());
}

TEST_CASE("plan_sandbox: a path both writable and read-only ends read-only") {
    config::SecuritySpec s;
    s.writable_paths = {"/srv"};
    s.read_only_paths = {"/srv"};
    SandboxStore store;
    std::vector<std::string> labels;
    ChildSandbox plan = plan_sandbox(s, 0, true, store, labels);
    CHECK(steps_of(plan, labels) == std::vector<std::string>{
                                        "capture /srv #0 [writable_paths /srv]",
                                        "restore /srv #0 [writable_paths /srv]",
                                        "readonly /srv [read_only_paths /srv]",
                                    });
}

TEST_CASE("plan_sandbox: without a cwd the run enters pkitd's working directory again") {
    config::SecuritySpec s;
    s.private_tmp = true;
    SandboxStore store;
    std::vector<std::string> labels;
    ChildSandbox plan = plan_sandbox(s, 0, false, store, labels);
    char here[PATH_MAX];
    REQUIRE(getcwd(here, sizeof here) != nullptr);
    REQUIRE(plan.chdir_to != nullptr);
    CHECK(std::string(plan.chdir_to) == here);
    CHECK(labels.at(static_cast<std::size_t>(plan.chdir_label)) ==
          "pkitd's working directory " + std::string(here));
}

TEST_CASE("plan_sandbox: capabilities are ambient only for a user other than root") {
    config::SecuritySpec s;
    s.capabilities = 1ULL << 10;  // CAP_NET_BIND_SERVICE
    s.no_new_privileges = true;
    s.private_network = true;
    for (uid_t uid : {0U, 65534U}) {
        CAPTURE(uid);
        SandboxStore store;
        std::vector<std::string> labels;
        ChildSandbox plan = plan_sandbox(s, uid, true, store, labels);
        CHECK(plan.any());
        CHECK_FALSE(plan.mount_namespace);  // none of these needs one
        CHECK(plan.steps.empty());
        CHECK(plan.chdir_to == nullptr);
        CHECK(plan.set_capabilities);
        CHECK(plan.capabilities == (1ULL << 10));
        CHECK(plan.ambient == (uid != 0));
        CHECK(plan.no_new_privileges);
        CHECK(plan.private_network);
        CHECK(labels.at(static_cast<std::size_t>(plan.network_label)) == "private_network");
        CHECK(labels.at(static_cast<std::size_t>(plan.capabilities_label)) == "capabilities");
        CHECK(labels.at(static_cast<std::size_t>(plan.no_new_privileges_label)) ==
              "no_new_privileges");
    }
}

TEST_CASE("plan_sandbox: no key, no plan") {
    SandboxStore store;
    std::vector<std::string> labels;
    ChildSandbox plan = plan_sandbox(config::SecuritySpec{}, 0, false, store, labels);
    CHECK_FALSE(plan.any());
    CHECK(plan.steps.empty());
    CHECK(labels.empty());
}

TEST_CASE("sandbox_words: one string a protection, in the order of the keys") {
    config::SecuritySpec s;
    s.no_new_privileges = true;
    s.capabilities = (1ULL << 10) | (1ULL << 0);
    s.private_tmp = true;
    s.protect_system = config::ProtectSystem::strict;
    s.writable_paths = {"/srv/data", "/var/log/app"};
    s.read_only_paths = {"/home"};
    s.inaccessible_paths = {"/root"};
    s.private_network = true;
    CHECK(sandbox_words(s) == std::vector<std::string>{
                                  "no_new_privileges",
                                  "capabilities CAP_CHOWN CAP_NET_BIND_SERVICE",
                                  "private_tmp",
                                  "protect_system strict",
                                  "writable_paths /srv/data",
                                  "writable_paths /var/log/app",
                                  "read_only_paths /home",
                                  "inaccessible_paths /root",
                                  "private_network",
                              });
    config::SecuritySpec none;
    none.capabilities = 0;
    CHECK(sandbox_words(none) == std::vector<std::string>{"capabilities (none)"});
    CHECK(sandbox_words(config::SecuritySpec{}).empty());
}

}  // namespace pkit::shell::test
