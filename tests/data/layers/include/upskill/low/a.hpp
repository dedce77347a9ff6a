#pragma once
// The lowest module's header, which includes only itself (fine).
