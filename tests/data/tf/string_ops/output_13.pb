BHello World!B
ÄBc é ZzB        