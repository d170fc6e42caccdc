int k1(int x) { return x + 1; }
