int k4(int x) { return x + 4; }
