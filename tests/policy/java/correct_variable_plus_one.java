// expect: none
// An expression that reads a variable the program does not fix is computed at run time.
public class SumCalculator {
    public static void main(String[] args) {
        int total = Integer.parseInt(args[0]);
        System.out.println(total + 1);
        System.out.println("Sum: " + total);
    }
}
