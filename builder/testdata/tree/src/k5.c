int k5(int x) { return x + 5; }
