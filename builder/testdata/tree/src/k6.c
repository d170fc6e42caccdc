int k6(int x) { return x + 6; }
