// kernel/extract: a kernel project's files from an answer's code blocks or a workspace.
#include <gtest/gtest.h>

#include "support/temp_dir.hpp"
#include "upskill/kernel/extract.hpp"

namespace upskill::kernel {
namespace {

const ExtractedFile* find(const Extraction& e, const std::string& path) {
  for (const auto& f : e.files)
    if (f.path == path) return &f;
  static const ExtractedFile kMissing{"(missing)", "", "", -1, "(missing)"};
  ADD_FAILURE() << "no extracted file " << path;
  return &kMissing;
}

TEST(Extract, EveryKindOfPathHint) {
  const std::string answer = R"(Here is the project.

```toml build.toml
[general]
name = "rmsnorm"
```

**`rmsnorm_cuda/rmsnorm.cu`**

```cuda
__global__ void k() {}
```

```cpp title="torch-ext/torch_binding.cpp"
#include "registration.h"
```

```python
# file: torch-ext/rmsnorm/__init__.py
from ._ops import ops
```

```cpp
// torch-ext/torch_binding.h
#pragma once
```

File: tests/test_rmsnorm.py
```python
def test(): pass
```

```cuda:rmsnorm_cuda/util.cuh
#pragma once
```

And to run it:

```bash
pip install .
```
)";
  const Extraction e = extract_files(answer);
  ASSERT_EQ(e.files.size(), 7u);
  EXPECT_TRUE(e.problems.empty()) << e.problems[0].message;
  EXPECT_EQ(find(e, "build.toml")->hint, "info string");
  EXPECT_EQ(find(e, "build.toml")->content, "[general]\nname = \"rmsnorm\"\n");
  EXPECT_EQ(find(e, "rmsnorm_cuda/rmsnorm.cu")->hint, "preceding line");
  EXPECT_EQ(find(e, "rmsnorm_cuda/rmsnorm.cu")->language, "cuda");
  EXPECT_EQ(find(e, "torch-ext/torch_binding.cpp")->hint, "info string");
  EXPECT_EQ(find(e, "torch-ext/rmsnorm/__init__.py")->hint, "file comment");
  EXPECT_EQ(find(e, "torch-ext/torch_binding.h")->hint, "file comment");
  EXPECT_EQ(find(e, "tests/test_rmsnorm.py")->hint, "preceding line");
  EXPECT_EQ(find(e, "rmsnorm_cuda/util.cuh")->language, "cuda");
  ASSERT_EQ(e.unnamed_blocks.size(), 1u);  // the bash snippet names no file: reported, not guessed
  EXPECT_EQ(e.files[0].line, 3);
}

TEST(Extract, ConflictsDuplicatesUnsafePathsAndUnclosedBlocks) {
  const std::string answer = R"(```cpp title="a.cpp"
// file: b.cpp
int x;
```

```cpp title="a.cpp"
int y;
```

```cpp title="../outside.cpp"
evil
```

```cpp title="/etc/passwd"
evil
```

~~~python path=last.py
never closed
)";
  const Extraction e = extract_files(answer);
  ASSERT_EQ(e.files.size(), 2u);
  EXPECT_EQ(find(e, "a.cpp")->content, "int y;\n");  // the later block wins, and it is said
  std::string all;
  for (const auto& p : e.problems) all += p.message + "\n";
  EXPECT_NE(all.find("the info string says 'a.cpp' but the file comment says 'b.cpp'"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("a.cpp is given twice (lines 1 and 6)"), std::string::npos) << all;
  EXPECT_NE(all.find("must stay inside the workspace"), std::string::npos) << all;
  EXPECT_NE(all.find("must be relative"), std::string::npos) << all;
  EXPECT_NE(all.find("never closed"), std::string::npos) << all;
  EXPECT_EQ(find(e, "last.py")->content, "never closed\n");
}

TEST(Extract, NothingToExtract) {
  const Extraction e =
      extract_files("No code here, just `inline` words and ```not a fence``` text.");
  EXPECT_TRUE(e.files.empty());
  EXPECT_TRUE(e.unnamed_blocks.empty());
}

TEST(Extract, LooksLikePath) {
  for (const char* yes : {"build.toml", "a/b.cu", "torch-ext/x/__init__.py", "k/Makefile"})
    EXPECT_TRUE(looks_like_path(yes)) << yes;
  for (const char* no : {"", "hello world.txt", "python", "a/", "v1.", "\"q\""})
    EXPECT_FALSE(looks_like_path(no)) << no;
}

TEST(Extract, Workspace) {
  testing::TempDir ws;
  ws.write("build.toml", "[general]");
  ws.write("k/a.cu", "x");
  ws.write("build/out.so", "binary");
  ws.write("__pycache__/m.pyc", "junk");
  std::filesystem::create_symlink("/etc/hostname", ws / "link.txt");
  auto e = extract_workspace(ws.path());
  ASSERT_TRUE(e) << e.error().message;
  ASSERT_EQ(e->files.size(), 2u);
  EXPECT_EQ(e->files[0].path, "build.toml");
  EXPECT_EQ(e->files[1].hint, "workspace");
  ASSERT_EQ(e->problems.size(), 1u);
  EXPECT_NE(e->problems[0].message.find("symbolic link"), std::string::npos);
  auto big = extract_workspace(ws.path(), 4);
  EXPECT_FALSE(big);
  EXPECT_FALSE(extract_workspace(ws / "missing"));
}

}  // namespace
}  // namespace upskill::kernel
