from jaxlings.worker.harness import main

main()
