int k2(int x) { return x + 2; }
