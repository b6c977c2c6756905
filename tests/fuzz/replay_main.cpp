// A main() for the fuzz targets where libFuzzer is not linked (g++, or clang without
// -fsanitize=fuzzer): runs LLVMFuzzerTestOneInput once over every regular file in the
// directories (or files) given as arguments, and prints how many it ran; none at all
// is a failure (a mistyped corpus path must not pass). Built with
// AddressSanitizer and UBSan (-fno-sanitize-recover=all), so an input that once
// crashed a target aborts this program, and the ctest entry fuzz-replay-TARGET fails.
//
//   pkit_fuzz_replay_TARGET DIR_OR_FILE...

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// Every regular file under `root` (or `root` itself) but README.md and hidden files,
// in name order so a run is reproducible. A missing directory is skipped: crashes/ may hold nothing
// yet.
std::vector<fs::path> inputs_under(const fs::path& root) {
    std::vector<fs::path> files;
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
        files.push_back(root);
    } else if (fs::is_directory(root, ec)) {
        for (const auto& entry : fs::recursive_directory_iterator(root, ec)) {
            const std::string name = entry.path().filename().string();
            if (entry.is_regular_file(ec) && !name.starts_with('.') && name != "README.md") {
                files.push_back(entry.path());
            }
        }
    }
    std::ranges::sort(files);
    return files;
}

}  // namespace

int main(int argc, char** argv) {
    int ran = 0;
    for (int i = 1; i < argc; ++i) {
        for (const fs::path& file : inputs_under(argv[i])) {
            std::ifstream in(file, std::ios::binary);
            if (!in) {
                std::fprintf(stderr, "cannot read %s\n", file.c_str());
                return 1;
            }
            std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>()};
            // A copy on the heap of exactly the input's size, as libFuzzer passes it,
            // so that reading past the end is caught by AddressSanitizer.
            std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
            std::fprintf(stderr, "running %s (%zu bytes)\n", file.c_str(), data.size());
            LLVMFuzzerTestOneInput(data.data(), data.size());
            ++ran;
        }
    }
    std::printf("%d inputs run\n", ran);
    return ran > 0 ? 0 : 1;
}
