from autograder.worker.harness import main

main()
