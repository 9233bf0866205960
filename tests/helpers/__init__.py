"""What the tests share: the test-only arms (toy_arm, evidence_toy), reference
implementations written apart from the package (reference_chart, reference_clevr), hypothesis
strategies and the tiny models the tests build and save themselves."""
