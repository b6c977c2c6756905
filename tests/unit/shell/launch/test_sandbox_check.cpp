// sandbox_warnings() (SPEC §19, `pkitd --check`): a warning at each [security] key this
// pkitd could not apply, given what it can do, and at each listed path missing here;
// nothing for a key that asks for nothing.

#include <string>
#include <vector>

#include "config/loader.hpp"
#include "daemon/shell/launch/sandbox_check.hpp"
#include "tests/unit/shell/shell_test.hpp"

namespace pkit::shell::test {

namespace {

const std::string k_check_file = "/dir/services/web.toml";

config::Tree check_tree(const std::string& text) {
    auto tree = config::load_text(text, config::TextKind::service, k_check_file,
                                  config::LoadOptions{.as_root = true});
    REQUIRE_MESSAGE(tree.has_value(), (tree ? "" : tree.error().front().to_string()));
    return std::move(*tree);
}

std::vector<std::string> warnings_of(const std::string& text, const SandboxAbilities& abilities) {
    std::vector<std::string> out;
    for (const config::Diagnostic& d : sandbox_warnings(check_tree(text), abilities)) {
        CHECK(d.warning);
        out.push_back(d.to_string());
    }
    return out;
}

const std::string k_every_key =
    "command = [\"/bin/true\"]\n"
    "[security]\n"
    "no_new_privileges = true\n"
    "capabilities = [\"CAP_NET_BIND_SERVICE\"]\n"
    "private_tmp = true\n"
    "protect_system = \"strict\"\n"
    "writable_paths = [\"/\"]\n"
    "read_only_paths = [\"/pkit-no-such-path\"]\n"
    "inaccessible_paths = []\n"
    "private_network = true\n";

std::string check_warning(int line, const std::string& key, const std::string& why) {
    return k_check_file + ":" + std::to_string(line) + ":1: warning: security." + key +
           ": not applied here: " + why + "; every launch fails with launch error sandbox";
}

}  // namespace

TEST_CASE("sandbox_warnings: not root, every key but no_new_privileges is warned at") {
    const SandboxAbilities none{};
    CHECK(warnings_of(k_every_key, none) ==
          std::vector<std::string>{
              check_warning(4, "capabilities", "pkitd is not root (it needs CAP_SETPCAP)"),
              check_warning(5, "private_tmp", "pkitd is not root"),
              check_warning(6, "protect_system", "pkitd is not root"),
              check_warning(7, "writable_paths", "pkitd is not root"),
              check_warning(8, "read_only_paths", "pkitd is not root"),
              check_warning(10, "private_network", "pkitd is not root"),
          });
}

TEST_CASE("sandbox_warnings: root without the namespaces says which is missing") {
    const SandboxAbilities root{.root = true};
    CHECK(warnings_of(k_every_key, root) ==
          std::vector<std::string>{
              check_warning(4, "capabilities", "pkitd lacks CAP_SETPCAP"),
              check_warning(5, "private_tmp", "mount namespaces are not available"),
              check_warning(6, "protect_system", "mount namespaces are not available"),
              check_warning(7, "writable_paths", "mount namespaces are not available"),
              check_warning(8, "read_only_paths", "mount namespaces are not available"),
              check_warning(10, "private_network", "network namespaces are not available"),
          });
}

TEST_CASE("sandbox_warnings: with every ability only a missing path is warned at") {
    const SandboxAbilities all{.root = true,
                               .can_drop_bounding = true,
                               .mount_namespace = true,
                               .network_namespace = true};
    CHECK(warnings_of(k_every_key, all) ==
          std::vector<std::string>{
              check_warning(8, "read_only_paths", "/pkit-no-such-path does not exist")});
}

TEST_CASE("sandbox_warnings: a key that asks for nothing is not warned at") {
    // Written, but off: no namespace is needed, so every launch would succeed.
    const std::string off =
        "command = [\"/bin/true\"]\n"
        "[security]\n"
        "private_tmp = false\n"
        "private_network = false\n"
        "writable_paths = []\n"
        "read_only_paths = []\n"
        "inaccessible_paths = []\n"
        "no_new_privileges = true\n";
    CHECK(warnings_of(off, SandboxAbilities{}).empty());
    CHECK(warnings_of("command = [\"/bin/true\"]\n", SandboxAbilities{}).empty());
}

}  // namespace pkit::shell::test
