// load_tree() with a LoadCache: a reload parses only the files that changed, and still
// sees every change and reports every error.

#include "tests/unit/config/config_doctest.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <cstdio>

#include "tests/unit/config/temp_tree.hpp"

using namespace pkit::config;
using namespace pkit::config::test;
using Errors = std::vector<std::string>;

namespace {

struct timespec mtime_of(const std::filesystem::path& file) {
    struct stat info {};
    REQUIRE(::stat(file.c_str(), &info) == 0);
    return info.st_mtim;
}

// Gives `file` the modification time `mtime` (its ctime moves on: no call can set it).
void set_mtime(const std::filesystem::path& file, struct timespec mtime) {
    struct timespec times[2] = {{0, UTIME_OMIT}, mtime};
    REQUIRE(::utimensat(AT_FDCWD, file.c_str(), times, 0) == 0);
}

std::string command_of(const LoadResult& result, std::string_view service) {
    REQUIRE(result.has_value());
    const ServiceSpec* spec = result->find_service(service);
    REQUIRE(spec != nullptr);
    return spec->command.at(0);
}

Errors error_texts(const LoadResult& result, const TempTree& tree) {
    Errors out;
    if (result) {
        return out;
    }
    std::string prefix = tree.root().string() + "/";
    for (const Diagnostic& d : result.error()) {
        std::string text = d.to_string();
        out.push_back(text.starts_with(prefix) ? text.substr(prefix.size()) : text);
    }
    return out;
}

// A clock an hour ahead: every file of the test is old enough for its identity to be
// trusted, so the loads below reuse every file they can.
std::int64_t an_hour_ahead() {
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return (static_cast<std::int64_t>(now.tv_sec) + 3600) * 1'000'000'000 + now.tv_nsec;
}

}  // namespace

TEST_CASE("a cached load sees a file rewritten at once with the same size and mtime") {
    // The kernel stamps files from a clock that moves in ticks: a rewrite within the
    // tick of the load before it can leave inode, size, mtime and ctime all equal. Such
    // a file was changed too recently to be trusted, and is parsed again.
    TempTree tree;
    tree.service("web", "command = [\"/bin/a00\"]\n");
    const auto file = tree.root() / "services" / "web.toml";
    LoadCache cache;
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == "/bin/a00");
    for (int round = 1; round <= 20; ++round) {
        struct timespec mtime = mtime_of(file);
        char command[16];
        std::snprintf(command, sizeof command, "/bin/a%02d", round);
        tree.service("web", "command = [\"" + std::string(command) + "\"]\n");  // same size
        set_mtime(file, mtime);
        CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == command);
    }
}

TEST_CASE("a cached load sees a file replaced by one of the same size and mtime") {
    TempTree tree;
    tree.service("web", "command = [\"/bin/a\"]\n");
    tree.service("db", "command = [\"/bin/d\"]\n");
    const auto file = tree.root() / "services" / "web.toml";
    LoadCache cache(an_hour_ahead);
    auto first = load_tree(tree.root(), test_options(), &cache);
    CHECK(command_of(first, "web") == "/bin/a");
    struct timespec mtime = mtime_of(file);
    // As an editor saves: a new file renamed over the old one, here with its mtime.
    tree.write("services/web.new", "command = [\"/bin/b\"]\n");
    set_mtime(tree.root() / "services" / "web.new", mtime);
    std::filesystem::rename(tree.root() / "services" / "web.new", file);
    auto second = load_tree(tree.root(), test_options(), &cache);
    CHECK(command_of(second, "web") == "/bin/b");
    CHECK(command_of(second, "db") == "/bin/d");
}

TEST_CASE("a cached load reports every bad file again, and sees files come and go") {
    TempTree tree;
    tree.service("a", "command = [\"/bin/a\"]\nbogus = 1\n");
    tree.service("b", "command = [\"/bin/b\"\n");
    tree.service("c", "command = [\"/bin/c\"]\n");
    LoadCache cache(an_hour_ahead);
    const Errors expected{
        "services/a.toml:2:1: error: unknown key \"bogus\"",
        "services/b.toml:1:21: error: invalid TOML while parsing array: encountered "
        "end-of-file",
    };
    auto first = load_tree(tree.root(), test_options(), &cache);
    CHECK(error_texts(first, tree) == expected);
    // c changes, a and b do not: their errors are still reported, in file order.
    tree.service("c", "command = [\"/bin/c\"]\nafter = [\"d\"]\n");
    auto second = load_tree(tree.root(), test_options(), &cache);
    Errors with_c = expected;
    with_c.push_back(
        "services/c.toml:2:10: error: after: unknown service \"d\"; did you mean \"a\"?");
    CHECK(error_texts(second, tree) == with_c);
    // d appears, the bad files go: the tree loads, with d.
    tree.service("d", "command = [\"/bin/d\"]\n");
    std::filesystem::remove(tree.root() / "services" / "a.toml");
    std::filesystem::remove(tree.root() / "services" / "b.toml");
    auto third = load_tree(tree.root(), test_options(), &cache);
    REQUIRE(third.has_value());
    REQUIRE(third->services.size() == 2);
    CHECK(third->services[0].name == "c");
    CHECK(third->services[1].name == "d");
    CHECK(third->services[0].after == std::vector<std::string>{"d"});
    // pkitd.toml is read every time: a group over the cached services is checked.
    tree.daemon("[groups.g]\nmembers = [\"c\", \"zz\"]\n");
    auto fourth = load_tree(tree.root(), test_options(), &cache);
    CHECK(error_texts(fourth, tree) ==
          Errors{"pkitd.toml:2:17: error: groups.g.members: unknown service \"zz\""});
}

// --- The services watch (inotify) --------------------------------------------------

TEST_CASE("with the services watch, a reload looks only at the files events named") {
    TempTree tree;
    for (int i = 0; i < 50; ++i) {
        tree.service("s" + std::to_string(100 + i), "command = [\"/bin/a\"]\n");
    }
    LoadCache cache(an_hour_ahead);
    REQUIRE(load_tree(tree.root(), test_options(), &cache).has_value());
    CHECK(cache.last_work().parsed == 50);
    CHECK(cache.last_work().listings == 1);
    // /tmp is a local filesystem here; over NFS every file would be looked at. With no
    // event, not even the directory is read again.
    REQUIRE(load_tree(tree.root(), test_options(), &cache).has_value());
    CHECK(cache.last_work().parsed == 0);
    CHECK(cache.last_work().checked == 0);
    CHECK(cache.last_work().listings == 0);
    CHECK(cache.last_work().files == 50);
    tree.service("s120", "command = [\"/bin/b\"]\n");
    auto changed = load_tree(tree.root(), test_options(), &cache);
    CHECK(command_of(changed, "s120") == "/bin/b");
    CHECK(command_of(changed, "s121") == "/bin/a");
    CHECK(cache.last_work().parsed == 1);
    CHECK(cache.last_work().checked == 0);
    // A file that comes and one that goes, after a load that did not list.
    REQUIRE(load_tree(tree.root(), test_options(), &cache).has_value());
    CHECK(cache.last_work().listings == 0);
    tree.service("s200", "command = [\"/bin/c\"]\n");
    std::filesystem::remove(tree.root() / "services" / "s100.toml");
    auto moved = load_tree(tree.root(), test_options(), &cache);
    REQUIRE(moved.has_value());
    CHECK(moved->services.size() == 50);
    CHECK(moved->find_service("s100") == nullptr);
    CHECK(command_of(moved, "s200") == "/bin/c");
    CHECK(cache.last_work().parsed == 1);
    CHECK(cache.last_work().checked == 0);
    CHECK(cache.last_work().listings == 1);
    // A file renamed into place, and one that is not a service file: only the first
    // counts.
    tree.write("services/s300.tmp", "command = [\"/bin/e\"]\n");
    REQUIRE(load_tree(tree.root(), test_options(), &cache).has_value());
    CHECK(cache.last_work().listings == 0);
    std::filesystem::rename(tree.root() / "services" / "s300.tmp",
                            tree.root() / "services" / "s300.toml");
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "s300") == "/bin/e");
    CHECK(cache.last_work().listings == 1);
    // An edit that keeps size and mtime is still an event.
    const auto file = tree.root() / "services" / "s130.toml";
    struct timespec mtime = mtime_of(file);
    tree.service("s130", "command = [\"/bin/d\"]\n");
    set_mtime(file, mtime);
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "s130") == "/bin/d");
}

TEST_CASE("a service file that is a symbolic link is looked at on every load") {
    // No event on services/ follows a link: a ConfigMap's files, say.
    TempTree tree;
    tree.write("elsewhere/web.toml", "command = [\"/bin/a\"]\n");
    tree.service("db", "command = [\"/bin/d\"]\n");
    std::filesystem::create_symlink("../elsewhere/web.toml", tree.root() / "services" / "web.toml");
    LoadCache cache(an_hour_ahead);
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == "/bin/a");
    REQUIRE(load_tree(tree.root(), test_options(), &cache).has_value());
    CHECK(cache.last_work().checked == 1);
    tree.write("elsewhere/web.toml", "command = [\"/bin/b\"]\n");
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == "/bin/b");
    CHECK(cache.last_work().parsed == 1);
}

TEST_CASE("a service file with another hard link is looked at on every load") {
    TempTree tree;
    tree.service("web", "command = [\"/bin/a\"]\n");
    std::filesystem::create_hard_link(tree.root() / "services" / "web.toml",
                                      tree.root() / "web-copy.toml");
    LoadCache cache(an_hour_ahead);
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == "/bin/a");
    // Written in place through the other name: no event on services/.
    tree.write("web-copy.toml", "command = [\"/bin/bb\"]\n");
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == "/bin/bb");
    CHECK(cache.last_work().checked == 1);
}

TEST_CASE("a services directory replaced by another is read afresh") {
    TempTree tree;
    tree.service("web", "command = [\"/bin/a\"]\n");
    tree.service("db", "command = [\"/bin/d\"]\n");
    LoadCache cache(an_hour_ahead);
    CHECK(command_of(load_tree(tree.root(), test_options(), &cache), "web") == "/bin/a");
    std::filesystem::rename(tree.root() / "services", tree.root() / "services.old");
    tree.service("web", "command = [\"/bin/b\"]\n");
    tree.service("db", "command = [\"/bin/e\"]\n");
    auto fresh = load_tree(tree.root(), test_options(), &cache);
    CHECK(command_of(fresh, "web") == "/bin/b");
    CHECK(command_of(fresh, "db") == "/bin/e");
    // The old directory's events are not the new one's: an edit there changes nothing.
    tree.write("services.old/web.toml", "command = [\"/bin/x\"]\n");
    tree.service("db", "command = [\"/bin/f\"]\n");
    auto again = load_tree(tree.root(), test_options(), &cache);
    CHECK(command_of(again, "web") == "/bin/b");
    CHECK(command_of(again, "db") == "/bin/f");
}

TEST_CASE("a cached load gives each unchanged file's services the stamp of its parse") {
    // ServiceSpec::stamp: the same parse, the same number; any other parse, another.
    TempTree tree;
    tree.service("a", "command = [\"/bin/a\"]\n");
    tree.service("b", "command = [\"/bin/b\"]\n");
    LoadCache cache(an_hour_ahead);
    auto stamp = [](const LoadResult& result, std::string_view name) {
        REQUIRE(result.has_value());
        return result->find_service(name)->stamp.number;
    };
    auto first = load_tree(tree.root(), test_options(), &cache);
    CHECK(stamp(first, "a") != 0);
    CHECK(stamp(first, "b") != 0);
    CHECK(stamp(first, "a") != stamp(first, "b"));
    auto again = load_tree(tree.root(), test_options(), &cache);
    CHECK(stamp(again, "a") == stamp(first, "a"));
    CHECK(stamp(again, "b") == stamp(first, "b"));
    tree.service("b", "command = [\"/bin/c\"]\n");
    auto changed = load_tree(tree.root(), test_options(), &cache);
    CHECK(stamp(changed, "a") == stamp(first, "a"));
    CHECK(stamp(changed, "b") != stamp(first, "b"));
    // Without the cache every file is parsed again, and numbered afresh; so is every
    // file of a cache made afresh, whose numbers a running spec may not share.
    auto uncached = load_tree(tree.root(), test_options());
    CHECK(stamp(uncached, "a") != stamp(changed, "a"));
    LoadCache fresh(an_hour_ahead);
    auto refreshed = load_tree(tree.root(), test_options(), &fresh);
    CHECK(stamp(refreshed, "a") != stamp(changed, "a"));
    CHECK(stamp(refreshed, "a") != stamp(uncached, "a"));
}
